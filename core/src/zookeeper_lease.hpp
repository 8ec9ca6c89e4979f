#pragma once
// The ZooKeeper lease strategy (zookeeper_lease.cpp), made by Client::lease_lock.

#include <avout/lease_lock.hpp>
#include <avout/zookeeper_session.hpp>

#include <memory>
#include <string>

namespace avout::detail {

/// Leases kept as one persistent node per key under `base` (which this call creates). The
/// session must outlive the strategy.
std::shared_ptr<LeaseStrategy> make_zookeeper_lease_strategy(ZooKeeperSession& session,
                                                             std::string base);

}  // namespace avout::detail
