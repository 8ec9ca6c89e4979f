#pragma once
// The engine of avout::WorkQueue (public header avout/work_queue.hpp). Items are persistent
// sequential nodes "i-<uuid>-<seq>" in the queue's folder (the sequential-queue engine: a
// protected create, or its create_op in a dosync's commit); a take deletes one at its exact
// version in a commit multi (stm/participant.hpp). Takers with nothing to take wait in a line
// of ephemeral sequential nodes "w-<id>-<seq>" in the folder's "waiters" child, where only
// the first watches the items (HoldRule::first(1): no herd).

#include "queue/sequential_queue.hpp"
#include "recipes/wake_signal.hpp"

#include <avout/deadline.hpp>
#include <avout/detail/work_queue_handle.hpp>
#include <avout/zookeeper_session.hpp>

#include <memory>
#include <optional>
#include <string>

namespace avout::detail {

class NodeRemovals;
class StmContext;
class OpenTransaction;

/// The work queue `name` of one client, whose items live in `folder`.
class WorkQueueCore final : public WorkQueueHandle {
 public:
  /// Opens the queue: creates its folder and its waiters' folder when new. `removals` (the
  /// client's) takes the waiters' nodes whose delete is not confirmed.
  WorkQueueCore(ZooKeeperSession& session, StmContext& stm, std::shared_ptr<NodeRemovals> removals,
                std::string name, std::string folder);
  ~WorkQueueCore() override = default;
  WorkQueueCore(const WorkQueueCore&) = delete;
  WorkQueueCore& operator=(const WorkQueueCore&) = delete;

  const std::string& name() const override { return name_; }
  void put(const Bytes& item, const Deadline& deadline) override;
  bool take(const Deadline& deadline, bool wait,
            const std::function<void(const Bytes&)>& accept) override;
  std::size_t size() override;

 private:
  // One attempt's take in `transaction`: the oldest item it has not taken yet, its delete
  // added to the commit; false when there is none.
  bool take_one(OpenTransaction& transaction, const std::function<void(const Bytes&)>& accept,
                const Deadline& deadline);
  // Waits in the takers' line until items are there (true) or `deadline` passed (false).
  bool wait_for_items(const Deadline& deadline);
  // The wait of the waiter node `own` for its turn and then for items, woken by `wake`:
  // true when items are there (or the node vanished: look again), false at the deadline.
  bool wait_in_line(const std::string& own, const std::shared_ptr<WakeSignal>& wake,
                    const Deadline& deadline);
  // The path of the folder's child `child`.
  std::string path_of(const std::string& child) const { return folder_ + "/" + child; }

  ZooKeeperSession& session_;
  StmContext& stm_;
  std::shared_ptr<NodeRemovals> removals_;  // the client's: outlives this core
  std::string name_;
  std::string folder_;
  SequentialQueue items_;
  SequentialQueue waiters_;
};

}  // namespace avout::detail
