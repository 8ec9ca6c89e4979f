#pragma once
// The names in an election's folder: candidate nodes of the sequential queue.

#include "queue/queue_names.hpp"

namespace avout::detail {

/// A candidate's node: "c-<uuid>-<sequence>", the candidate's id in its data.
inline NodeKind candidate_kind() { return NodeKind{"c", 0}; }

}  // namespace avout::detail
