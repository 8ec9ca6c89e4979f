#pragma once
// The names in a barrier's folder: participant nodes of the sequential queue.

#include "queue/queue_names.hpp"

namespace avout::detail {

/// A barrier participant's node: "p-<16 hex digits>-<sequence>".
inline NodeKind participant_kind() { return NodeKind{"p", 16}; }

}  // namespace avout::detail
