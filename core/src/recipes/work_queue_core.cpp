// WorkQueueCore: puts (a create in a commit multi), takes (a delete at the item's version in
// a commit multi) and the takers' waiting line.
#include "recipes/work_queue_core.hpp"
#include "queue/node_removals.hpp"
#include "recipes/work_queue_items.hpp"
#include "stm/participant.hpp"

#include <avout/detail/ref_handle.hpp>
#include <avout/errors.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace avout::detail {

WorkQueueCore::WorkQueueCore(ZooKeeperSession& session, StmContext& stm,
                             std::shared_ptr<NodeRemovals> removals, std::string name,
                             std::string folder)
    : session_(session),
      stm_(stm),
      removals_(std::move(removals)),
      name_(std::move(name)),
      folder_(std::move(folder)),
      items_(session, folder_, item_kind, CreateMode::persistent_sequential),
      waiters_(session, path_of(waiters_folder), waiter_kind, CreateMode::ephemeral_sequential) {
  session_.create_recursive(path_of(waiters_folder));
  removals_->start();
}

void WorkQueueCore::put(const Bytes& item, const Deadline& deadline) {
  if (!item_fits(folder_, item.size())) {
    throw ValueTooLarge("work queue " + name_ + ": an item of " + std::to_string(item.size()) +
                        " bytes does not fit a ZooKeeper node");
  }
  // Outside dosync a put is a dosync of its own, so the create always goes out in a commit
  // multi with its marker: a lost reply is resolved by the marker, which nothing but this
  // client removes. The item's own absence would prove nothing: a taker may have consumed it
  // before the put looked, and creating it again would queue it twice.
  if (OpenTransaction::current() == nullptr && deadline.expired())
    deadline.expire("work queue " + name_ + ": put (nothing queued)");
  run_transaction(stm_, deadline, [&] {
    OpenTransaction::current()->add_to_commit({items_.create_op(items_.fresh_prefix(), item)}, {});
  });
}

bool WorkQueueCore::take(const Deadline& deadline, bool wait,
                         const std::function<void(const Bytes&)>& accept) {
  bool took = false;
  try {
    // A bounded take bounds its own waits for ZooKeeper; an unbounded one inside a dosync
    // keeps the dosync's bound.
    std::optional<ReplyDeadline> replies;
    if (deadline.bounded()) replies.emplace(deadline);
    // Joins the running dosync, or runs one of its own (the take commits alone).
    run_transaction(stm_, deadline, [&] {
      took = false;
      auto* transaction = OpenTransaction::current();
      // An unbounded take inside a bounded dosync waits no longer than the dosync may.
      const Deadline bound = deadline.bounded() ? deadline : ReplyDeadline::current();
      while (!(took = take_one(*transaction, accept, bound))) {
        if (!wait || !wait_for_items(bound)) return;
      }
    });
  } catch (const Timeout&) {
    if (!deadline.expired()) throw;  // not ours: the dosync's own bound
    return false;
  }
  return took;
}

bool WorkQueueCore::take_one(OpenTransaction& transaction,
                             const std::function<void(const Bytes&)>& accept,
                             const Deadline& deadline) {
  // Raw children: items_to_try orders them and drops what this transaction takes already.
  const auto listed = items_.list(deadline);
  if (!listed) return false;
  std::vector<Operation> pending;
  for (const auto& addition : transaction.additions())
    pending.insert(pending.end(), addition.operations.begin(), addition.operations.end());
  for (const auto& path : items_to_try(folder_, *listed, pending)) {
    NodeData node;
    try {
      node = session_.get(path);
    } catch (const NoNode&) {  // taken by a commit since the listing
      continue;
    }
    accept(node.data);
    // The first commit deleting this version wins; another taker's fails on it and its
    // dosync runs again, listing the queue anew.
    transaction.add_to_commit({op::Remove{path, node.stat.version}}, {});
    return true;
  }
  return false;
}

bool WorkQueueCore::wait_for_items(const Deadline& deadline) {
  const std::string prefix = waiters_.fresh_prefix();
  // Each wait has its own signal: a watch wakes the one taker that set it, not every taker
  // of this process. A session change (a renewed session took the node) wakes it too.
  const auto wake = std::make_shared<WakeSignal>();
  const std::uint64_t listener = session_.add_listener([wake](SessionState) { wake->bump(); });
  std::optional<std::string> node;
  // Leaving the line wakes the waiter behind (it looks at the items in turn); on every way
  // out, a throw included. Bounded by a session timeout of its own: the caller's deadline
  // may have passed. A delete not confirmed by then (a lost reply, an outage) goes to the
  // removals: left in a live session, the node would stand in line.
  const auto leave = [&] {
    const Deadline grace = Deadline::after(session_.negotiated_timeout());
    const auto generation = session_.generation();
    if (node) {
      (void)removals_->remove_now(waiters_, *node, generation, grace);
    } else {
      (void)removals_->remove_created_now(waiters_, prefix, generation, grace);
    }
    session_.remove_listener(listener);
  };
  bool ready = false;
  try {
    node = waiters_.create(prefix, {}, deadline);
    if (node) ready = wait_in_line(name_of(*node), wake, deadline);
  } catch (...) {
    leave();
    throw;
  }
  leave();
  return ready;
}

bool WorkQueueCore::wait_in_line(const std::string& own, const std::shared_ptr<WakeSignal>& wake,
                                 const Deadline& deadline) {
  // Held by the watches: one may fire after this wait ended.
  const auto bump = [wake](const WatchEvent&) { wake->bump(); };
  // A waiter looks at the items when first in line; the others only when the one ahead
  // leaves. Each also looks once a session timeout passes unwoken: a waiter's node left
  // behind by a create whose reply came too late cannot hold the line for good.
  bool poll = false;
  while (!deadline.expired()) {
    const auto seen = wake->count();
    const auto turn = waiters_.turn(own, HoldRule::first(1), bump, deadline);
    if (!turn) return false;
    if (turn->vanished) return true;  // the session ended: look, then line up again
    if (turn->holds || poll) {
      const auto listed = items_.list(deadline, turn->holds ? WatchCallback(bump) : nullptr);
      if (!listed) return false;
      if (!listed->empty()) return true;
    }
    if (!turn->holds && turn->watch.empty()) continue;  // the one ahead left already
    if (!wake->wait_past(seen, deadline, session_.negotiated_timeout())) return false;
    poll = wake->count() == seen;
  }
  return false;
}

std::size_t WorkQueueCore::size() {
  const auto listed = items_.list(Deadline{});
  return listed ? listed->size() : 0;
}

}  // namespace avout::detail
