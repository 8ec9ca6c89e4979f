#pragma once
// The names of an agent's send nodes, "s-<tag>-<sequence>" under <root>/agents/queues<name>:
// a closure's tag is a bare uuid, a named action's "n<uuid>" (docs/recipes.md, "Agents").

#include "queue/sequence.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace avout::detail {

/// The sequence number ZooKeeper appended to a send node's name (sequence.hpp: it wraps, so
/// it orders only through SequenceOrder).
inline std::optional<std::int32_t> sequence_of(std::string_view name) { return sequence_after_dash(name); }

/// The last segment of a node path (the whole of a bare name).
inline std::string last_segment(const std::string& path) { return path.substr(path.rfind('/') + 1); }

/// Whether a send node's name is a named send's: "s-n<uuid>-<sequence>".
inline bool is_named_send(const std::string& segment) { return segment.rfind("s-n", 0) == 0; }

/// Whether a tag is a named send's ("n<uuid>"): another process may run its node as soon as
/// it exists.
inline bool is_named_tag(const std::string& tag) { return tag.rfind('n', 0) == 0; }

}  // namespace avout::detail
