#pragma once
// The store records: which store keeps the values of each atom, ref and agent
// (docs/architecture.md), so that no process reads or writes an object through another
// store than its creator's. The first attach writes the record; every attach checks it.

#include "runtime/layout.hpp"

#include <avout/backend.hpp>
#include <avout/zookeeper_session.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace avout::detail {

/// Makes sure ZooKeeper records `mine` as the store of the `kind` ("atom", "ref", "agent")
/// `name`: writes the record when there is none (objects made before records existed get
/// theirs here), else compares. Mismatch naming the object and both stores when the record
/// names another store; nothing else is read or written. One get when the record exists; a
/// lost reply of the create is resolved by reading what landed. RetryLimitExceeded after
/// `retry_limit` rounds of answers lost or races lost.
void claim_store(ZooKeeperSession& session, const Layout& layout, const std::string& kind,
                 const std::string& name, const StoreIdentity& mine, std::size_t retry_limit);

/// The store ZooKeeper records for the `kind` `name`; nullopt when there is no record
/// (the object does not exist, or predates records). CodecError when the record is malformed.
std::optional<StoreIdentity> recorded_store(ZooKeeperSession& session, const Layout& layout,
                                            const std::string& kind, const std::string& name);

}  // namespace avout::detail
