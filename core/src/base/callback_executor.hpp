#pragma once
// The client's callback thread: user watches and lock-loss callbacks run here, never on
// ZooKeeper's event thread.

#include <avout/logger.hpp>

#include <chrono>
#include <functional>
#include <memory>

namespace avout::detail {

/// Runs callbacks one at a time on a thread of its own (never on ZooKeeper's event thread),
/// so that a callback may call avout freely. A callback that throws is reported to `logger`.
class CallbackExecutor {
 public:
  /// Starts the thread; `logger` (empty: the default one) hears of callbacks that threw.
  explicit CallbackExecutor(Logger logger = {});
  ~CallbackExecutor();
  CallbackExecutor(const CallbackExecutor&) = delete;
  CallbackExecutor& operator=(const CallbackExecutor&) = delete;
  /// Queues `task`; dropped once stop() began.
  void post(std::function<void()> task);
  /// Queues `task` once `delay` has passed, the thread free meanwhile; dropped once stop()
  /// began (stop() does not wait for the delay).
  void post_after(std::chrono::milliseconds delay, std::function<void()> task);
  /// Refuses new tasks, lets the running one finish, then stops the thread (idempotent).
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
}  // namespace avout::detail
