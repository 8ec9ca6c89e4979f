#pragma once
// The one source of unique ids of a process: writer ids of atoms and locks
// (`unique_writer_id`, declared with the atom core) and the uuids of ref points.

#include <string>

namespace avout::detail {

/// A random version-4 uuid, "8-4-4-4-12" lowercase hex, from the same per-process source as
/// unique_writer_id (reseeded in a forked child).
std::string unique_uuid();

}  // namespace avout::detail
