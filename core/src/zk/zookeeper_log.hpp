#pragma once
// The ZooKeeper C client's own log, routed per handle to that handle's Logger. The C client's
// log callback gets only the line (no handle, no context), so each live handle borrows one of
// a fixed set of distinct callbacks, each bound to one logger. Nothing here changes the C
// client's process-wide level or stream.

#include "zk/zookeeper_c.hpp"

#include <avout/logger.hpp>

#include <cstddef>

namespace avout::detail {

/// One handle's claim on a log callback; release it only after zookeeper_close returned.
class ZooKeeperLogRoute {
 public:
  /// Binds a free callback to `logger` (empty: the default logger).
  explicit ZooKeeperLogRoute(Logger logger);
  ~ZooKeeperLogRoute();
  ZooKeeperLogRoute(const ZooKeeperLogRoute&) = delete;
  ZooKeeperLogRoute& operator=(const ZooKeeperLogRoute&) = delete;

  /// The callback to give zookeeper_init2.
  log_callback_fn callback() const;

 private:
  std::size_t slot_;
};

}  // namespace avout::detail
