#pragma once
// Whether what this client holds through its ZooKeeper session (lock nodes, and whatever the
// recipes built on ephemeral nodes hold) may still count: one monitor per session, with one
// thread for every subscriber. It follows the session's state, marks the moment the server
// may have ended the session after a disconnect (the lapse), and notices stalls of this
// process (a SIGSTOP, a starved or swapped-out process) by the gaps between its own ticks:
// after one, nothing counts until the server answers this session again.

#include <avout/zookeeper_session.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace avout::detail {

/// What a SessionLiveness tells its subscribers.
enum class LivenessEvent {
  disconnected,  ///< the connection dropped; the session may live on (holds count until the lapse)
  connected,     ///< a server accepted the session again (the same one, or a renewed one)
  lapsed,        ///< still disconnected: the server may have ended the session by now, so
                 ///< another process may hold what this one held
  expired,       ///< the session ended (expired, or its credentials refused): its
                 ///< ephemeral nodes are gone
  stalled,       ///< this process did not run long enough for the session to have ended:
                 ///< nothing counts until `confirmed` (or an expiry)
  confirmed,     ///< after a stall, the server answered this session: it never ended
};

/// One party that holds something through the session (a lock core, a recipe).
class LivenessSubscriber {
 public:
  virtual ~LivenessSubscriber() = default;
  /// Hears one event, on the ZooKeeper event thread, the session's renewal thread or the
  /// monitor's thread, one at a time: it may only take its own mutex briefly, notify and post
  /// (never wait for ZooKeeper). It may unsubscribe itself or others.
  virtual void on_liveness(LivenessEvent event) = 0;
  /// True while a stall must be confirmed for this subscriber: it holds something, or is
  /// taking a hold decided on what it saw before the stall. Same rules as on_liveness.
  virtual bool needs_confirmation() const = 0;
};

/// The liveness monitor of one session; thread safe. Its thread and session listener start
/// with the first subscriber; without one, it costs nothing.
class SessionLiveness {
 public:
  /// Watches `session`, which must outlive it.
  explicit SessionLiveness(ZooKeeperSession& session);
  /// Ends the thread; every subscriber must have unsubscribed.
  ~SessionLiveness();
  SessionLiveness(const SessionLiveness&) = delete;
  SessionLiveness& operator=(const SessionLiveness&) = delete;

  /// Registers `subscriber` (which must stay alive until unsubscribed); returns its id.
  /// Call it with no lock held that on_liveness takes.
  std::uint64_t subscribe(LivenessSubscriber& subscriber);
  /// After return the subscriber is never called again (unless this runs inside one of its
  /// own calls, which then finishes). Call it with no lock held that on_liveness takes.
  void unsubscribe(std::uint64_t id);

  /// False once the server may have ended the session while this process was disconnected
  /// (until it reconnects), or after a stall until it is confirmed, including a stall not
  /// yet noticed by a tick. What a subscriber holds counts only while this is true.
  bool may_hold() const;
  /// True once the lapse after a disconnect has come (until the reconnect).
  bool lapsed() const;

 private:
  struct Entry {
    LivenessSubscriber* subscriber;
    bool active = true;  // guarded by dispatching_
  };
  void on_session(SessionState state);
  // With dispatching_ held: calls every active subscriber.
  void dispatch(LivenessEvent event);
  // With dispatching_ held: true when some subscriber needs a stall confirmed.
  bool confirmation_needed();
  void run();
  // One tick of the stall check: notices a gap, and confirms a stall by a sync on the same
  // session (sent without waiting for it; its answer is looked at on later ticks).
  void check_stall();
  std::chrono::milliseconds stall_limit() const;

  ZooKeeperSession& session_;
  std::once_flag started_;
  std::uint64_t listener_ = 0;

  // Held while subscribers are called, and while the state changes that they are told of,
  // so they hear the changes in the order they happen. Recursive: a subscriber may
  // unsubscribe while it is called.
  std::recursive_mutex dispatching_;
  std::map<std::uint64_t, std::shared_ptr<Entry>> subscribers_;
  std::uint64_t next_id_ = 1;

  mutable std::mutex mutex_;  // guards everything below; never held while calling out
  std::condition_variable changed_;
  // While disconnected: when the server may have ended the session.
  std::optional<std::chrono::steady_clock::time_point> lapse_at_;
  std::optional<std::chrono::steady_clock::time_point> lapse_told_;  // the lapse already told
  // The last tick; a longer gap means this process did not run (frozen, starved).
  std::chrono::steady_clock::time_point last_tick_ = std::chrono::steady_clock::now();
  bool unconfirmed_ = false;  // after a stall, until the server answers this session again
  std::uint64_t stalls_ = 0;  // stalls noticed so far
  bool stopping_ = false;

  // The sync confirming a stall (touched by the monitor's thread only).
  struct Confirmation {
    std::future<void> reply;
    std::uint64_t generation;  // of the session it was sent on
    std::uint64_t stalls;      // stalls_ when sent: a later stall makes its answer too old
    std::chrono::steady_clock::time_point give_up_at;
  };
  std::optional<Confirmation> confirmation_;
  std::thread thread_;
};

}  // namespace avout::detail
