#pragma once
// The engine of avout::Semaphore (public header avout/semaphore.hpp): permit nodes queue in
// the semaphore's folder through the sequential-queue engine (protected create, listing in
// order, HoldRule::first(N) and its window of N nodes to watch, release at an exact version);
// the folder node records N. Whether the session still backs the permits it learns from the
// session's liveness monitor, as the locks do. A permit node whose delete is not confirmed
// (a lost reply, an outage) goes to the client's node removals, which send it again.

#include "queue/sequential_queue.hpp"
#include "recipes/wake_signal.hpp"
#include "runtime/metrics_recorder.hpp"
#include "zk/session_liveness.hpp"

#include <avout/deadline.hpp>
#include <avout/zookeeper_session.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace avout::detail {

class CallbackExecutor;
class NodeRemovals;

/// One granted permit: its node and token, and whether it still counts.
struct PermitState {
  std::string node;              ///< the permit node's path
  std::uint64_t token = 0;       ///< the node's czxid
  std::uint64_t generation = 0;  ///< the session the node was made in (read after its create)
  bool lost = false;             ///< the session may have ended since (guarded by the core's mutex)
  bool released = false;         ///< given back (guarded by the core's mutex)
};

/// The semaphore `name` of one client, shared by its Semaphore copies and Permits.
class SemaphoreCore : public std::enable_shared_from_this<SemaphoreCore>,
                      private LivenessSubscriber {
 public:
  /// The semaphore of `n` permits whose folder is `folder`; start() opens it. `removals`
  /// (the client's) takes the nodes whose delete is not confirmed; `metrics` records each
  /// acquisition's wait.
  SemaphoreCore(ZooKeeperSession& session, SessionLiveness& liveness,
                std::shared_ptr<CallbackExecutor> callbacks, std::shared_ptr<NodeRemovals> removals,
                std::string name, std::string folder, std::size_t n, MetricsRecorder metrics = {});
  /// Unsubscribes from the liveness monitor.
  ~SemaphoreCore() override;
  SemaphoreCore(const SemaphoreCore&) = delete;
  SemaphoreCore& operator=(const SemaphoreCore&) = delete;

  /// Creates the folder when new and records N, or throws Mismatch; subscribes to liveness
  /// and starts the removals.
  void start();
  /// A granted permit, or null once `deadline` passed (`once`: after one look at the queue);
  /// nothing of the attempt stays queued then.
  std::shared_ptr<PermitState> acquire(const Deadline& deadline, bool once);
  /// Deletes `permit`'s node unless released or lost already (a lost permit's node went with
  /// its session or to the removals); a delete not confirmed goes to the removals. Never
  /// throws.
  void release(PermitState& permit) noexcept;
  /// True while `permit` is neither released nor lost and the session may back it.
  bool held(const PermitState& permit) const;
  /// Adds a callback for lost permits.
  void on_lost(std::function<void()> callback);
  /// The number of permits.
  std::size_t permits() const { return n_; }
  /// The semaphore's name.
  const std::string& name() const { return name_; }

 private:
  // acquire() but for its measurement.
  std::shared_ptr<PermitState> acquire_permit(const Deadline& deadline, bool once);
  // Records N in the folder, or throws Mismatch when another N is recorded there.
  void claim_count();
  // Waits for the turn of the node at `node`: true when it holds, false when the deadline
  // passed (or, `once`, it does not hold at the first look); `vanished` set when the node
  // went with its session.
  bool wait_turn(const std::string& node, const Deadline& deadline, bool once, bool& vanished);
  // The czxid of `node`: 0 when it is gone, nullopt once the deadline passed.
  std::optional<std::uint64_t> token_of(const std::string& node, const Deadline& deadline);
  // Removes what an attempt left in the session of `generation`: the node at `node`, or a
  // create of `prefix` in doubt, within grace(); what is not confirmed goes to removals_.
  void give_up(const std::string& prefix, const std::string& node, std::uint64_t generation);
  // The bound of an undoing step: one session timeout.
  Deadline grace() const;
  // The session's liveness changed: wakes the waits, marks permits lost at a lapse or expiry
  // (their nodes to removals_: after a lapse the session may live on, node and all).
  void on_liveness(LivenessEvent event) override;
  // True while a permit is held or being acquired: a stall must then be confirmed.
  bool needs_confirmation() const override;

  ZooKeeperSession& session_;
  SessionLiveness& liveness_;
  std::shared_ptr<CallbackExecutor> callbacks_;
  std::shared_ptr<NodeRemovals> removals_;  // the client's: outlives this core's handles
  std::string name_;
  std::string folder_;
  std::size_t n_;
  SequentialQueue queue_;
  std::shared_ptr<WakeSignal> wake_ = std::make_shared<WakeSignal>();
  std::uint64_t subscription_ = 0;  // of liveness_ (0: none yet)
  MetricsRecorder metrics_;

  mutable std::mutex mutex_;                        // guards everything below
  std::set<std::shared_ptr<PermitState>> permits_;  // granted, not yet released
  int acquiring_ = 0;                               // acquire() calls in flight
  std::vector<std::function<void()>> lost_callbacks_;
};

}  // namespace avout::detail
