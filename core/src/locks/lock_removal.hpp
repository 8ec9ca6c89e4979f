#pragma once
// Deleting a lock's or a lease lock's nodes, only while nobody holds or waits for it: a hold
// in another process must never vanish under it.

#include <avout/zookeeper_session.hpp>

#include <string>

namespace avout::detail {

/// Removes the nodes of the lock whose folder is `base` (its writers queue; with
/// `read_write`, also its readers and gates), `what` naming it in messages. False when it
/// does not exist; NotEmpty (naming the folder) when it is held or waited for, and then
/// nothing is removed. The folder itself stays while names nested below it use it.
bool remove_lock_nodes(ZooKeeperSession& session, const std::string& what,
                       const std::string& base, bool read_write);

/// Removes the key nodes of the lease lock whose folder is `base`, and the folder. False
/// when it does not exist; NotEmpty when some key's lease is held (nothing removed then,
/// unless a key freed meanwhile went already). Tokens start again from 1 afterwards.
bool remove_lease_nodes(ZooKeeperSession& session, const std::string& what,
                        const std::string& base);

}  // namespace avout::detail
