// Client::lease_lock: lease locks kept in ZooKeeper, under the client's root.
#include "runtime/runtime.hpp"
#include "runtime/zookeeper_backend.hpp"

#include <avout/client.hpp>

namespace avout {

LeaseLock Client::lease_lock(const std::string& name) {
  validate_path(name);
  return LeaseLock(
      detail::make_zookeeper_lease_strategy(*session_, runtime_->layout().lease(name)));
}

}  // namespace avout
