// ElectionCore's campaign, resign and leader(): a node in line, a wait on the one node right
// ahead of it, the claim once it is first.
#include "base/back_off.hpp"
#include "queue/node_removals.hpp"
#include "recipes/election_core.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

void ElectionCore::campaign(const Deadline& deadline) {
  std::lock_guard operation(operations_);
  if (is_leader()) return;
  const std::string what = "election " + name_ + ": campaign of " + id_;
  const auto wake_me = [wake = wake_](const WatchEvent&) { wake->bump(); };
  const Bytes id(id_.begin(), id_.end());
  std::string prefix;
  for (std::size_t losses = 0;;) {
    std::optional<std::string> node;
    {
      std::lock_guard lock(mutex_);
      node = node_;
    }
    if (!node) {  // a first campaign, or again after the session took the node
      prefix = queue_.fresh_prefix();
      node = queue_.create(prefix, id, deadline);  // a lost reply is found again: made once
      if (!node) {
        withdraw(prefix);
        deadline.expire(what);
      }
      // Read after the create: one made while the session renewed lives in the new one. (A
      // node of a session that ended since is gone, and the next turn says so.)
      const auto generation = session_.generation();
      std::lock_guard lock(mutex_);
      node_ = node;
      node_generation_ = generation;
    }
    const auto seen = wake_->count();
    std::optional<Turn> turn;
    try {
      turn = queue_.turn(name_of(*node), HoldRule::first(1), wake_me, deadline);
    } catch (const ConnectionLoss&) {  // the session may well survive: look again
      if (back_off(losses++, deadline, outage_pauses)) continue;
    } catch (const SessionExpired&) {  // the renewed session's turn says the node vanished
      if (back_off(losses++, deadline, outage_pauses)) continue;
    }
    if (!turn) {
      withdraw(prefix);
      deadline.expire(what);
    }
    if (turn->vanished) {  // gone with an ended session: queue again
      std::lock_guard lock(mutex_);
      if (node_ == node) node_.reset();
      continue;
    }
    if (turn->holds && claim(*node)) return;
    if (!turn->holds && turn->watch.empty()) continue;  // the one ahead is gone already
    if (!wake_->wait_past(seen, deadline, look_again_after)) {
      withdraw(prefix);
      deadline.expire(what);
    }
  }
}

bool ElectionCore::claim(const std::string& node) {
  std::optional<NodeStat> stat;
  try {
    const ReplyDeadline replies(grace());
    stat = session_.exists(node);
  } catch (const ConnectionLoss&) {
    return false;
  } catch (const Timeout&) {
    return false;
  }
  std::lock_guard lock(mutex_);
  if (!stat) {  // gone with its session since the listing
    if (node_ == node) node_.reset();
    return false;
  }
  // A lapse, an expiry or a stall since the listing: not a leadership anyone may rely on.
  if (node_ != node || !liveness_.may_hold()) return false;
  leading_ = true;
  token_ = static_cast<std::uint64_t>(stat->czxid);
  return true;
}

void ElectionCore::withdraw(const std::string& prefix) {
  std::optional<std::string> node;
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(mutex_);
    node = node_;
    generation = node ? node_generation_ : session_.generation();
    node_.reset();
  }
  // Not confirmed within the grace (a lost reply, an outage): left in a live session the
  // node would stand in line for good, so the removals send the delete again.
  if (node) {
    (void)removals_->remove_now(queue_, *node, generation, grace());
  } else if (!prefix.empty()) {  // a create in flight
    (void)removals_->remove_created_now(queue_, prefix, generation, grace());
  }
}

void ElectionCore::resign() {
  std::lock_guard operation(operations_);
  std::optional<std::string> node;
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(mutex_);
    node = node_;
    generation = node_generation_;
    node_.reset();
    leading_ = false;  // before the deletion: never two leaders believing at once
    token_ = 0;
  }
  if (node) (void)removals_->remove_now(queue_, *node, generation, grace());
}

std::optional<std::string> ElectionCore::leader(const Deadline& deadline) {
  for (std::size_t attempt = 0;; ++attempt) {
    try {
      const auto line = queue_.list(deadline);
      if (!line) deadline.expire("election " + name_ + ": leader");
      if (line->empty()) return std::nullopt;
      const ReplyDeadline replies(deadline);
      const auto first = session_.get(folder_ + "/" + line->front());
      return std::string(first.data.begin(), first.data.end());
    } catch (const NoNode&) {  // the first left since the listing: look again
      continue;
    } catch (const ConnectionLoss&) {
    }
    if (!back_off(attempt, deadline, outage_pauses)) {
      deadline.expire("election " + name_ + ": leader");
    }
  }
}

}  // namespace avout::detail
