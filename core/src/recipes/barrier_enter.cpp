// BarrierCore::enter: queue a node, wait until a round of N closes with it, or withdraw.
#include "queue/node_removals.hpp"
#include "recipes/barrier_core.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <chrono>

namespace avout::detail {

void BarrierCore::enter(const Deadline& deadline) {
  std::lock_guard lock(mutex_);
  if (round_) throw Error("barrier " + name_ + ": enter again before leave");
  const std::string what = "barrier " + name_ + ": enter";
  const auto wake_me = [wake = wake()](const WatchEvent&) { wake->bump(); };
  std::string prefix;
  for (;;) {
    if (!node_) {  // a first arrival, or again after the session took the node
      prefix = queue_.fresh_prefix();
      const auto made = queue_.create(prefix, {}, deadline);
      // Read after the create: one made while the session renewed lives in the new one. (A
      // node of a session that ended since is gone, and the next look or check says so.)
      generation_ = session_.generation();
      if (!made) {
        if (withdraw(prefix)) return;
        deadline.expire(what);
      }
      node_ = *made;
    }
    const auto seen = wake_->count();
    const auto snapshot = look(deadline);
    if (!snapshot) {
      if (withdraw(prefix)) return;
      deadline.expire(what);
    }
    if (member(snapshot->round)) {
      round_ = snapshot->round;
      round_version_ = snapshot->version;
      return;
    }
    if (!snapshot->round.closed) {  // a closed round without us: wait for it to reopen
      const auto line = round_line(snapshot->children, snapshot->round);
      const auto at = std::find(line.begin(), line.end(), mine());
      if (at == line.end()) {  // gone with an ended session: arrive again
        node_.reset();
        continue;
      }
      const auto place = static_cast<std::size_t>(at - line.begin());
      if (place + 1 == n_) {
        if (!try_close(*snapshot, line, deadline)) continue;
        return;
      }
      if (place >= n_) {
        // Only a node leaving among the N right ahead can bring us to place N-1 (hold_rule).
        const auto turn = queue_.turn_in(line, mine(), HoldRule::first(n_), wake_me, deadline);
        if (!turn) {
          if (withdraw(prefix)) return;
          deadline.expire(what);
        }
        if (turn->watch.empty()) continue;  // one of them is gone already
      }
      // Ahead of place N-1: the arrival that takes it closes the round; the watch the look
      // set on the folder's record wakes us then.
    }
    if (!wake_->wait_past(seen, deadline, look_again_after)) {
      if (withdraw(prefix)) return;
      deadline.expire(what);
    }
  }
}

bool BarrierCore::try_close(const Snapshot& seen, const std::vector<std::string>& line,
                            const Deadline& deadline) {
  // One multi: the record changes only if it is still the open round we saw, and only with
  // every member's node still there (one that timed out and withdrew is not counted).
  const BarrierRound closed = closed_round(seen.round, line, n_);
  std::vector<Operation> ops{
      op::SetData{folder_, encode_record(BarrierRecord{n_, closed}), seen.version}};
  for (const auto& name : closed.members) ops.emplace_back(op::Check{path_of(name), 0});
  try {
    const ReplyDeadline replies(deadline);
    const auto result = session_.multi(ops, generation_);
    if (!result.committed) return false;  // look again
    round_ = closed;
    round_version_ = result.results.front().stat.version;
    return true;
  } catch (const ConnectionLoss&) {  // the next look shows whether it landed
  } catch (const SessionExpired&) {
  } catch (const Timeout&) {  // the next look gives up, and the withdrawal looks again
  }
  return false;
}

bool BarrierCore::withdraw(const std::string& prefix) {
  // The deadline passed: take our node away unless the round closed with it (then we did
  // enter, and say so). A conditional remove: the record unchanged, so no closer counts it.
  const Deadline bound = grace();
  bool settled = false;  // our node is gone
  try {
    if (!node_) {  // a create whose outcome is unknown: find it by its unique prefix
      const auto found = queue_.find(prefix, bound);
      if (!found) return false;
      node_ = *found;
    }
    while (!settled) {
      const auto snapshot = look(bound);
      if (!snapshot) break;
      if (member(snapshot->round)) {
        round_ = snapshot->round;
        round_version_ = snapshot->version;
        return true;
      }
      if (std::find(snapshot->children.begin(), snapshot->children.end(), mine()) ==
          snapshot->children.end()) {
        settled = true;  // gone already
        break;
      }
      try {
        const ReplyDeadline replies(bound);
        const std::vector<Operation> ops{op::Check{folder_, snapshot->version},
                                         op::Remove{*node_, 0}};
        settled = session_.multi(ops, generation_).committed;
      } catch (const ConnectionLoss&) {
      } catch (const SessionExpired&) {
        settled = true;  // the node went with the session
      }
    }
  } catch (const Timeout&) {
  }
  // Not settled within the bound (an outage, lost replies): left in a live session the node
  // would count in a later round, so the removals delete it (a round that closed with it
  // meanwhile sees a death then and breaks, as at the session's end).
  if (!settled && node_) removals_->post(*node_, generation_);
  if (!settled && !node_) removals_->post_created(folder_, prefix, generation_);
  node_.reset();
  return false;
}

}  // namespace avout::detail
