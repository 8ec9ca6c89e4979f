#pragma once
// The ZooKeeper recipe behind Lock and ReadWriteLock (see distributed_lock.hpp for the
// protocol), on the sequential-queue engine (locks/lock_queues.hpp). One LockCore per lock
// handle family; holds are per thread. Whether the session still backs the holds (a
// disconnect's lapse, an expiry, a stall of this process) it learns from the client's
// SessionLiveness: no thread of its own. Its code, by job: lock_core.cpp (opening, the
// acquisition's frame), lock_mutex.cpp (the writer queue), lock_read_write.cpp (readers and
// the writer policies of locks/rw_policy.hpp), lock_nodes.cpp (making, waiting on and
// removing nodes), lock_holds.cpp (holds and their loss), guarded_by.cpp, lock_handle.cpp.

#include "locks/lock_queues.hpp"
#include "runtime/metrics_recorder.hpp"
#include "zk/session_liveness.hpp"

#include <avout/deadline.hpp>
#include <avout/distributed_lock.hpp>
#include <avout/zookeeper_session.hpp>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace avout::detail {

class CallbackExecutor;
class NodeRemovals;

class LockCore : public std::enable_shared_from_this<LockCore>, private LivenessSubscriber {
 public:
  /// `policy` empty: a plain mutex (writers only). `liveness` is the session's monitor;
  /// `metrics` records each acquisition's wait.
  LockCore(ZooKeeperSession& session, SessionLiveness& liveness, std::string name, std::string path,
           std::optional<WriterPolicy> policy, std::chrono::milliseconds quiet_period,
           std::shared_ptr<CallbackExecutor> callbacks, std::shared_ptr<NodeRemovals> removals,
           std::optional<std::chrono::milliseconds> operation_timeout = std::nullopt,
           MetricsRecorder metrics = {});
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

  /// The lock's name.
  const std::string& name() const { return name_; }
  /// The writer policy of a ReadWriteLock; empty for a mutex.
  std::optional<WriterPolicy> policy() const { return policy_; }
  /// The deadline of a lock() given none: the client's operation_timeout from now, or none.
  Deadline default_deadline() const;

 private:
  // One thread's hold, from its acquisition to its release.
  struct Hold {
    std::string node;         // the writer or reader node
    std::string gate;         // a soft writer's gate node (empty: none)
    std::uint64_t token = 0;  // read on first use (0: not yet)
    int count = 0;            // nested holds (a writer's reads count here too)
    bool shared = false;
    bool lost = false;
  };
  // Records the writer policy in the lock's folder node, or checks the one recorded there.
  void claim_policy();
  // Makes the lock's folders (and records its policy): on open, and again after
  // Client::remove_lock removed them under this handle.
  void make_folders();
  // The mutex core: queues a writer node and waits for its turn, then bars readers as the
  // policy says. False when the deadline passed (what it made is given up).
  bool acquire_exclusive(const Deadline& deadline, Hold& hold);
  // acquire()'s look at this thread's hold: true when it holds already (counted once more),
  // else counts the acquisition in and sets `generation` to the expiries seen so far.
  bool reenter(bool shared, std::uint64_t& generation);
  // Keeps `hold` just taken, unless the session expired since `generation`: then gives its
  // nodes up and throws LockLost.
  void keep(Hold hold, std::uint64_t generation, const Deadline& deadline);
  // Queues this thread's writer node with the first listing of the writers sent right behind
  // the create (one round trip when uncontended); the listing goes to `listed` (nullopt when
  // lost). False when the deadline passed first.
  bool queue_writer(const Deadline& deadline, Hold& hold,
                    std::optional<std::vector<std::string>>& listed);
  // Waits until the writer node `own` is first in the writer queue, starting from `listed`,
  // watching only its predecessor. False when the deadline passed; LockLost when it vanished.
  bool wait_first_in_line(const std::string& own, std::optional<std::vector<std::string>> listed,
                          const Deadline& deadline);
  // A writer first in line keeps readers out as the policy says (a mutex: nothing to do):
  // waits for the readers inside to leave, closing a gate for a soft policy. False when the
  // deadline passed.
  bool bar_readers(const Deadline& deadline, Hold& hold);
  // The readers' queue as listed after a sync, riding out connection losses; nullopt when
  // the deadline passed.
  std::optional<std::vector<std::string>> readers_now(const Deadline& deadline);
  // Waits until no reader is inside (`quiet`: and none came or went for quiet_period_);
  // false when the deadline passed.
  bool wait_for_readers_to_leave(const Deadline& deadline, bool quiet);
  // A reader: queues its node, then holds unless a barrier of the policy (a queued writer, a
  // closed gate) is ahead; else leaves and waits for that barrier to go.
  bool acquire_shared(const Deadline& deadline, Hold& hold);
  // Creates a node of `queue` named `prefix`<sequence> by `deadline` (the engine's protected
  // create); `sent`: a create of that name already went out with no answer, so look for it
  // first. nullopt when the deadline passed first (a create perhaps in flight then goes to
  // removals_).
  std::optional<std::string> create_node(SequentialQueue& queue, const std::string& prefix,
                                         const Deadline& deadline, bool sent = false);
  // After a ConnectionLoss: waits for a session change (reconnect, expiry) or a back-off
  // pause, whichever comes first (a request that failed while the connection stayed up
  // brings no event); false once the deadline passed.
  bool ride_out(std::size_t attempt, std::uint64_t seen, const Deadline& deadline);
  // A lock wait's own nodes (empty names skipped), released when it gives up without a hold,
  // awaiting each reply until `deadline` (or 50 ms, once it passed); those not confirmed by
  // then go to removals_.
  void give_up(std::vector<std::string> nodes, const Deadline& deadline);
  // Deletes a node of a hold being released, waiting for the reconnect during an outage.
  void remove_own(const std::string& node);
  // Deletes a released hold's nodes: the gate first, then its place in line.
  void remove_hold_nodes(const Hold& hold);
  // The count of session changes seen, which wakes every wait.
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
  // With mutex_ held: this thread's hold, or null.
  const Hold* hold_of_this_thread() const;
  // With mutex_ held: the nodes of every hold not lost, gates first.
  std::vector<std::string> nodes_of_live_holds() const;

  ZooKeeperSession& session_;
  SessionLiveness& liveness_;  // the client's: tells lapses, expiries and stalls
  std::string name_;
  std::string folder_;  // the lock's node; a ReadWriteLock's holds its writer policy
  LockQueues queues_;   // its writers, readers and gates on the sequential-queue engine
  std::optional<WriterPolicy> policy_;
  std::chrono::milliseconds quiet_period_;
  std::shared_ptr<CallbackExecutor> callbacks_;
  std::shared_ptr<NodeRemovals> removals_;  // the client's: outlives this core's handles
  std::optional<std::chrono::milliseconds> operation_timeout_;
  MetricsRecorder metrics_;
  std::uint64_t subscription_ = 0;  // of liveness_ (0: none yet)

  // Guards everything below; watch and liveness callbacks take it briefly.
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t events_ = 0;
  std::uint64_t session_events_ = 0;
  std::uint64_t lost_generation_ = 0;  // bumped when the session expires
  int acquiring_ = 0;  // acquire() calls in flight (their holds are not in holds_ yet)
  std::map<std::thread::id, Hold> holds_;
  std::vector<std::function<void()>> lost_callbacks_;
  bool stopping_ = false;
};

}  // namespace avout::detail
