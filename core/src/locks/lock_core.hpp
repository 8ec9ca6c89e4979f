#pragma once
// The ZooKeeper recipe behind Lock and ReadWriteLock (see distributed_lock.hpp for the
// protocol). One LockCore per lock handle family; holds are per thread. Whether the session
// still backs the holds (a disconnect's lapse, an expiry, a stall of this process) it learns
// from the client's SessionLiveness: no thread of its own.

#include "zk/session_liveness.hpp"

#include <avout/deadline.hpp>
#include <avout/distributed_lock.hpp>
#include <avout/zookeeper_session.hpp>

#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace avout::detail {

class CallbackExecutor;
class LockRemovals;

class LockCore : public std::enable_shared_from_this<LockCore>, private LivenessSubscriber {
 public:
  /// `policy` empty: a plain mutex (writers only). `liveness` is the session's monitor.
  LockCore(ZooKeeperSession& session, SessionLiveness& liveness, std::string name, std::string path,
           std::optional<WriterPolicy> policy, std::chrono::milliseconds quiet_period,
           std::shared_ptr<CallbackExecutor> callbacks, std::shared_ptr<LockRemovals> removals,
           std::optional<std::chrono::milliseconds> operation_timeout = std::nullopt);
  ~LockCore() override;
  LockCore(const LockCore&) = delete;
  LockCore& operator=(const LockCore&) = delete;

  /// Makes the lock's folders exist and subscribes to the session's liveness. A ReadWriteLock
  /// records its writer policy on first open; Mismatch when it was opened with another.
  void start();
  /// Takes a hold for this thread by `deadline`; false when it passed (nothing left behind:
  /// nodes whose removal or create is not answered by then go to removals_). Requests in
  /// flight are abandoned at the deadline. A stop request on the deadline's token wakes the
  /// waits at once.
  bool acquire(bool shared, const Deadline& deadline);
  /// Ends one hold of this thread; a lost hold is dropped quietly. LockLost when this thread
  /// holds nothing. Local state goes only once the nodes are deleted or known gone.
  void release(bool shared);
  /// True while this thread holds (shared: for reading) and the session is not lost.
  bool held(bool shared) const;
  /// The fencing token of this thread's hold (0: none): the zxid that created the node
  /// proving it, so readers' and writers' tokens form one increasing sequence.
  std::uint64_t token(bool shared);
  /// Adds a callback for lost holds.
  void on_lost(std::function<void()> callback);
  /// The node whose existence proves this thread's hold; LockLost when there is none.
  std::string proof_of_hold(bool shared) const;

  const std::string& name() const { return name_; }
  std::optional<WriterPolicy> policy() const { return policy_; }
  /// The deadline of a lock() given none: the client's operation_timeout from now, or none.
  Deadline default_deadline() const;

 private:
  struct Hold {
    std::string node;          // the writer or reader node
    std::string gate;          // a soft writer's gate node (empty: none)
    std::uint64_t token = 0;   // read on first use (0: not yet)
    int count = 0;             // nested holds (a writer's reads count here too)
    bool shared = false;
    bool lost = false;
  };
  void claim_policy();
  bool acquire_exclusive(const Deadline& deadline, Hold& hold);
  bool acquire_shared(const Deadline& deadline, Hold& hold);
  // Lists the writers (or uses `listed`); true when `own` is first, else waits for the
  // predecessor to go (or the deadline) and returns false.
  bool first_in_line(const std::string& own, std::optional<std::vector<std::string>>& listed,
                     std::uint64_t seen, const Deadline& deadline);
  bool wait_for_readers_to_leave(const Deadline& deadline, bool quiet);
  // Creates an ephemeral sequential node <folder>/<kind>-<unique id>- by `deadline`; `sent`
  // says a first create of that name already went out with no answer. nullopt when the
  // deadline passed first (a create out with no answer then goes to removals_).
  std::optional<std::string> create_own(const std::string& folder, const std::string& own,
                                        const Deadline& deadline, bool sent = false);
  // The reply of `request` by `deadline`: nullopt when the deadline passed (or its stop was
  // requested) first; the request stays in flight, its reply reaching nobody.
  template <typename T>
  std::optional<T> reply_by(std::future<T> request, const Deadline& deadline) const;
  // The same for a reply without a value: false when the deadline passed first.
  bool arrived_by(std::future<void> request, const Deadline& deadline) const;
  // The children of `folder` after a sync (as new as every write before the call) by
  // `deadline`; nullopt when it passed first.
  std::optional<std::vector<std::string>> synced_children(const std::string& folder,
                                                          const Deadline& deadline,
                                                          WatchCallback watch = {}) const;
  // After a ConnectionLoss: waits for a session change (reconnect, expiry) or a back-off
  // pause, whichever comes first (a request that failed while the connection stayed up
  // brings no event); false once the deadline passed.
  bool ride_out(std::size_t attempt, std::uint64_t seen, const Deadline& deadline);
  // A lock wait's own nodes (empty names skipped), deleted when it gives up without a hold:
  // the removals are sent at once and their replies awaited until `deadline` (or 50 ms, once
  // it passed); those not confirmed by then go to removals_.
  void give_up(std::vector<std::string> nodes, const Deadline& deadline);
  // Deletes a node of a hold being released, waiting for the reconnect during an outage.
  void remove_own(const std::string& node);
  void remove_hold_nodes(const Hold& hold);
  std::uint64_t session_events() const;
  // A watch callback that sets `fired` (when given) and wakes the waiters.
  WatchCallback wake(std::shared_ptr<bool> fired = nullptr) const;
  // Waits until `fired`, a session change after `session_seen`, or the deadline; false
  // when the deadline passed.
  bool wait_fired(const std::shared_ptr<bool>& fired, std::uint64_t session_seen,
                  const Deadline& deadline);
  // The session's liveness changed: wakes the waits, marks holds lost at a lapse or expiry.
  void on_liveness(LivenessEvent event) override;
  // True while this core holds or acquires: a stall must then be confirmed.
  bool needs_confirmation() const override;
  // With mutex_ held: marks every hold lost; returns the callbacks to run (once per loss).
  // `keep`: the session may live on, so its nodes go to removals_.
  std::vector<std::function<void()>> mark_lost(bool keep);
  const Hold* hold_of_this_thread() const;
  // With mutex_ held: the nodes of every hold not lost, gates first.
  std::vector<std::string> nodes_of_live_holds() const;

  ZooKeeperSession& session_;
  SessionLiveness& liveness_;  // the client's: tells lapses, expiries and stalls
  std::string name_;
  std::string folder_;  // the lock's node; a ReadWriteLock's holds its writer policy
  std::string writers_;
  std::string readers_;
  std::string gates_;
  std::optional<WriterPolicy> policy_;
  std::chrono::milliseconds quiet_period_;
  std::shared_ptr<CallbackExecutor> callbacks_;
  std::shared_ptr<LockRemovals> removals_;  // the client's: outlives this core's handles
  std::optional<std::chrono::milliseconds> operation_timeout_;
  std::uint64_t subscription_ = 0;  // of liveness_ (0: none yet)

  // Guards everything below; watch and liveness callbacks take it briefly.
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t events_ = 0;
  std::uint64_t session_events_ = 0;
  std::uint64_t lost_generation_ = 0;  // bumped when the session expires
  int acquiring_ = 0;         // acquire() calls in flight (their holds are not in holds_ yet)
  std::map<std::thread::id, Hold> holds_;
  std::vector<std::function<void()>> lost_callbacks_;
  bool stopping_ = false;
};

}  // namespace avout::detail
