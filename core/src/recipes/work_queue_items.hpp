#pragma once
// The work queue's pure parts, over plain names and operations (no ZooKeeper here): which
// items a take may try, in order, and which items fit a node.

#include "queue/queue_names.hpp"

#include <avout/zookeeper_session.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace avout::detail {

/// The items: persistent nodes "i-<uuid>-<sequence>", found again by the uuid after a lost
/// reply.
inline const NodeKind item_kind{"i", 0};

/// The takers waiting for items: ephemeral nodes "w-<uuid>-<sequence>", gone with a taker's
/// session, in the queue folder's child waiters_folder.
inline const NodeKind waiter_kind{"w", 0};

/// The name of the queue folder's child holding the takers' line.
inline constexpr const char* waiters_folder = "waiters";

/// The paths of the items of `folder` a take may try, oldest first: the item nodes among the
/// folder's `children` (as listed) in queue order, less those a delete among `pending` (the
/// operations already added to the take's commit) removes: an earlier take of the same
/// transaction got them.
std::vector<std::string> items_to_try(const std::string& folder, std::vector<std::string> children,
                                      const std::vector<Operation>& pending);

/// True when an item of `bytes` bytes fits one node of `folder` in a request (ValueTooLarge
/// otherwise).
bool item_fits(const std::string& folder, std::size_t bytes);

}  // namespace avout::detail
