#pragma once
// The one source of unique ids of a process: writer ids of atoms and locks
// (`unique_writer_id`) and the uuids of ref points.

#include <cstdint>
#include <string>

namespace avout::detail {

/// A 64-bit id that no other write of any process is expected to share.
std::uint64_t unique_writer_id();

/// A random version-4 uuid, "8-4-4-4-12" lowercase hex, from the same per-process source as
/// unique_writer_id (reseeded in a forked child).
std::string unique_uuid();

}  // namespace avout::detail
