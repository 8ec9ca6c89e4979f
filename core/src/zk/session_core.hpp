#pragma once
// The state behind a ZooKeeperSession: the current handle and its generation, the renewal
// after expiry, the listeners, the persistent watches to re-arm, the request counters.

#include "zk/persistent_watch.hpp"
#include "zk/zookeeper_c.hpp"
#include "zk/zookeeper_handle.hpp"

#include <avout/zookeeper_session.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace avout::detail {

/// Shared by a ZooKeeperSession and the callbacks of its handles.
struct SessionCore {
  SessionOptions options;

  mutable std::mutex mutex;  // guards everything below up to `listeners`
  std::condition_variable changed;
  std::shared_ptr<Handle> handle;
  std::uint64_t generation = 0;  // of `handle`
  int state = 0;                 // last state of `handle`
  int candidate_state = 0;       // last state of a handle being opened (generation + 1)
  bool closing = false;
  std::thread renewer;

  // A listener stays alive while it runs even when it (or a lock handle dying inside it)
  // removes itself: dispatch calls shared copies, and `active` stops later calls.
  struct Listener {
    std::function<void(SessionState)> call;
    bool active = true;  // guarded by `dispatching`
  };
  std::recursive_mutex dispatching;  // held while listeners run
  std::map<std::uint64_t, std::shared_ptr<Listener>> listeners;
  std::uint64_t next_listener = 1;

  std::mutex persistent_mutex;
  std::vector<std::weak_ptr<PersistentWatch>> persistent;

  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> multi_operations{0};
  std::atomic<std::uint64_t> round_trips{0};

  std::shared_ptr<Handle> current() const {
    std::lock_guard lock(mutex);
    return handle;
  }

  // With `mutex` held: the session of `before` expired or was replaced.
  bool ended_since(std::uint64_t before) const {
    return generation != before || state == ZOO_EXPIRED_SESSION_STATE;
  }

  // The handle for a new request. One made after the session expired, while the renewal is
  // under way, waits for the renewed session (up to connect_timeout) instead of failing at
  // once on the dead handle: it belongs to no attempt of the old session, and callers that
  // span the two see the generation change.
  std::shared_ptr<Handle> for_request();

  // Calls every active listener with `session_state`, on the calling thread.
  void dispatch(SessionState session_state);

  // The C client's state callback for the handle of `handle_generation`.
  void on_state(std::uint64_t handle_generation, int new_state);

  // Opens the handle of generation `handle_generation` and waits until it is connected and
  // authenticated; throws ConnectionLoss after connect_timeout.
  std::shared_ptr<Handle> open(std::uint64_t handle_generation);

  // Adds the digest credentials to `target`; throws ConnectionLoss after connect_timeout.
  void authenticate(Handle& target);

  // The renewer thread: opens a new session each time the current one expires.
  void renew_forever();

  // Stops the renewal thread and closes the handle (idempotent).
  void shut_down();

  // Re-arms every live persistent watch on `target` and tells each to look again.
  void rearm_persistent_watches(Handle& target);
};

}  // namespace avout::detail
