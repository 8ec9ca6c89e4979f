#pragma once
// What the core asks of backends/zookeeper: every client makes the default store and its
// lease locks there. Declared here, defined in backends/zookeeper/src (compiled into the core's
// library), so the core names no backend header.

#include <avout/backend.hpp>
#include <avout/lease_lock.hpp>
#include <avout/zookeeper_session.hpp>

#include <memory>
#include <string>

namespace avout::detail {

/// The ZooKeeper store keeping values under `root` (zookeeper::Store); `session` must outlive it.
std::unique_ptr<Store> make_zookeeper_store(ZooKeeperSession& session, std::string root);

/// Leases kept as one persistent node per key under `base` (which this call creates). The
/// session must outlive the strategy.
std::shared_ptr<LeaseStrategy> make_zookeeper_lease_strategy(ZooKeeperSession& session,
                                                             std::string base);

}  // namespace avout::detail
