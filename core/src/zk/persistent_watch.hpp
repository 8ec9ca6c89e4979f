#pragma once
// Persistent watches (ZooKeeperSession::watch_persistently): a one-shot exists-watch re-armed
// each time it fires, and re-armed by the session's renewal on the next session.

#include "zk/zookeeper_handle.hpp"

#include <avout/zookeeper_session.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace avout::detail {

// A persistent watch: a one-shot exists-watch re-armed each time it fires. The user hears
// of an event only once the re-arm is answered: whatever the callback then reads, in
// ZooKeeper or in a store elsewhere, is at least as new as any change that fires nothing.
struct PersistentWatch : std::enable_shared_from_this<PersistentWatch> {
  std::string path;
  WatchCallback callback;
  Logger logger;
  std::atomic<bool> active{true};
  std::recursive_mutex calling;  // held while the user callback runs; the owner waits on it

  // Arms on `handle`; `then` (if any) is delivered once the server has the watch.
  void arm(Handle* handle, std::optional<WatchEvent> then = std::nullopt);
  void deliver(const WatchEvent& event) {
    std::lock_guard lock(calling);
    if (!active) return;
    run_callback_safely(
        logger, [&] { callback(event); }, "persistent watch callback");
  }
};

// Keeps a persistent watch alive; on destruction waits for a running callback to finish.
struct PersistentSubscription {
  std::shared_ptr<PersistentWatch> watch;
  explicit PersistentSubscription(std::shared_ptr<PersistentWatch> watched)
      : watch(std::move(watched)) {}
  PersistentSubscription(const PersistentSubscription&) = delete;
  PersistentSubscription& operator=(const PersistentSubscription&) = delete;
  ~PersistentSubscription() {
    watch->active = false;
    std::lock_guard wait_for_running_callback(watch->calling);
  }
};

}  // namespace avout::detail
