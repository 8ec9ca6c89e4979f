#pragma once
// The candidate behind avout::LeaderElection (see leader_election.hpp for the protocol): a
// node in the election's queue on the sequential-queue engine (HoldRule::first(1)), whose
// leadership the session's liveness monitor keeps honest; a node whose delete is not
// confirmed goes to the client's node removals. Its code: election_core.cpp
// (opening, is_leader, the liveness events), election_campaign.cpp (campaign, resign,
// leader), leader_election.cpp (the handle and guarded_by).

#include "base/callback_executor.hpp"
#include "queue/sequential_queue.hpp"
#include "recipes/wake_signal.hpp"
#include "zk/session_liveness.hpp"

#include <avout/deadline.hpp>
#include <avout/zookeeper_session.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace avout::detail {

class NodeRemovals;

/// One candidate of one election name.
class ElectionCore : private LivenessSubscriber {
 public:
  /// The candidate `id` of election `name` in `folder`; `liveness` is the session's monitor,
  /// `callbacks` the client's callback thread, `removals` the client's node removals.
  ElectionCore(ZooKeeperSession& session, SessionLiveness& liveness,
               std::shared_ptr<CallbackExecutor> callbacks, std::shared_ptr<NodeRemovals> removals,
               std::string name, std::string folder, std::string id);
  /// Resigns (a bounded try: the session's end takes the node anyway) and unsubscribes.
  ~ElectionCore() override;
  ElectionCore(const ElectionCore&) = delete;
  ElectionCore& operator=(const ElectionCore&) = delete;

  /// Makes the folder exist, starts the removals and subscribes to the session's liveness.
  void start();
  /// Leads by `deadline` (at once when leading); Timeout when it passed, candidacy withdrawn.
  void campaign(const Deadline& deadline);
  /// Ends leadership or candidacy; deletes the node. Idempotent.
  void resign();
  /// True while leading and the session may still back the node.
  bool is_leader() const;
  /// The first candidate's id, read after a sync; nullopt when none. Timeout at `deadline`.
  std::optional<std::string> leader(const Deadline& deadline);
  /// Adds a callback for lost leaderships.
  void on_revoked(std::function<void()> callback);
  /// The creating zxid of the leader's node; 0 when not leading.
  std::uint64_t fencing_token() const;
  /// The node proving the leadership; LockLost when not leading.
  std::string proof_of_leadership() const;
  /// The election's name.
  const std::string& name() const { return name_; }
  /// This candidate's id.
  const std::string& id() const { return id_; }
  /// The deadline of leader() given none: two session timeouts from now.
  Deadline default_deadline() const;

 private:
  // The liveness changed: a lapse or an expiry ends the leadership (callbacks once).
  void on_liveness(LivenessEvent event) override;
  // True while a candidate node exists: a stall must be confirmed.
  bool needs_confirmation() const override;
  // Withdraws after a deadline: the node, or the one a create of `prefix` perhaps made.
  void withdraw(const std::string& prefix);
  // Claims leadership of `node` just found first in line; false when it must look again.
  bool claim(const std::string& node);
  // The bound of an undoing step after the caller's deadline: one session timeout.
  Deadline grace() const;

  ZooKeeperSession& session_;
  SessionLiveness& liveness_;
  std::shared_ptr<CallbackExecutor> callbacks_;
  std::shared_ptr<NodeRemovals> removals_;  // the client's: outlives this core
  std::string name_;
  std::string folder_;
  std::string id_;
  SequentialQueue queue_;  // the candidates, "c-<uuid>-<sequence>"
  std::shared_ptr<WakeSignal> wake_ = std::make_shared<WakeSignal>();
  std::uint64_t subscription_ = 0;  // of liveness_ (0: none yet)

  std::mutex operations_;  // one campaign or resign at a time

  mutable std::mutex mutex_;           // guards what follows; liveness callbacks take it briefly
  std::optional<std::string> node_;    // this candidate's node (path)
  std::uint64_t node_generation_ = 0;  // the session node_ was made in (read after the create)
  bool leading_ = false;
  std::uint64_t token_ = 0;  // the czxid of node_ while leading
  std::vector<std::function<void()>> revoked_callbacks_;
};

}  // namespace avout::detail
