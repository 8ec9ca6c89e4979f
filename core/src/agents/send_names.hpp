#pragma once
// The names of an agent's send nodes, "s-<tag>-<sequence>" under <root>/agents/queues<name>:
// a closure's tag is a bare uuid, a named action's "n<uuid>" (docs/recipes.md, "Agents").
// They are a queue of the one engine (queue/queue_names.hpp): its sequence_of parses them,
// in_queue_order orders them (modulo 2^32), name_of gives a node path's name.

#include "queue/queue_names.hpp"

#include <string>

namespace avout::detail {

/// The send nodes of an agent's queue folder: kind "s", the tag as the id (a uuid, or 'n'
/// and a uuid: any non-empty id). Other children (the folder of /x/y in /x's) are not sends.
inline const NodeKind send_kind{"s", 0};

/// Whether a send node's name is a named send's: "s-n<uuid>-<sequence>".
inline bool is_named_send(const std::string& name) { return name.rfind("s-n", 0) == 0; }

/// Whether a tag is a named send's ("n<uuid>"): another process may run its node as soon as
/// it exists.
inline bool is_named_tag(const std::string& tag) { return tag.rfind('n', 0) == 0; }

}  // namespace avout::detail
