#pragma once
// What every opener of a recipe's name must agree on (a barrier's participant count, a
// semaphore's permits), recorded in the data of the name's folder node by its first opener.

#include <avout/bytes.hpp>
#include <avout/zookeeper_session.hpp>

#include <functional>
#include <string>

namespace avout::detail {

/// Writes `record` into the empty data of `folder` (a conditional write: one opener wins),
/// then hands what is recorded to `check`, which throws Mismatch when it disagrees. Rides out
/// connection losses for two session timeouts; Timeout ("<what>: ...") past them.
void claim_record(ZooKeeperSession& session, const std::string& folder, const Bytes& record,
                  const std::function<void(const Bytes&)>& check, const std::string& what);

}  // namespace avout::detail
