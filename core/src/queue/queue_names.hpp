#pragma once
// The names of a sequential queue's nodes, "<kind>-<id>-<sequence>": `kind` tells the queues
// sharing a folder apart (a lock's 'w', an agent's 's'), `id` is unique to one create (so the
// node is found again after its reply was lost: Curator's protected mode), and the sequence is
// what ZooKeeper appended (queue/sequence.hpp: it wraps, so it orders modulo 2^32).
// Pure functions over names: no ZooKeeper here.

#include "queue/sequence.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace avout::detail {

/// Which nodes of a folder make one queue, and how their ids look.
struct NodeKind {
  std::string kind;               ///< the name's first part, e.g. "w"; no '-' in it
  std::size_t hex_id_digits = 0;  ///< ids of exactly this many hex digits; 0: any non-empty id
};

/// True for a node of `kind`: "<kind>-<id>-<sequence>" with an id as the kind says. Other
/// children (folders of names nested below, another kind's nodes) are not in the queue.
bool is_queue_node(std::string_view name, const NodeKind& kind);

/// The sequence ZooKeeper appended to a queue node's name (the one parse: after its last '-',
/// with the sign of a negative one); nullopt for a name without one.
std::optional<std::int32_t> sequence_of(std::string_view name);

/// The nodes of `kind` among `names`, in queue order (modulo-2^32 sequence order).
std::vector<std::string> in_queue_order(std::vector<std::string> names, const NodeKind& kind);

/// "<kind>-<id>-": the prefix a create sends, the server appending the sequence.
std::string prefix_for(const NodeKind& kind, std::string_view id);

/// A prefix with a fresh unique id (base/unique_ids.hpp): hex digits when the kind asks for
/// them, else a uuid; `mark` goes before a uuid (an agent's 'n' of a named send).
std::string fresh_prefix(const NodeKind& kind, std::string_view mark = {});

/// The name (last segment) of a node's path.
std::string name_of(std::string_view path);

}  // namespace avout::detail
