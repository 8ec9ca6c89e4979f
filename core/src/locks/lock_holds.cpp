// A lock's holds and their loss: release, the questions asked of a hold, and what the
// session's liveness monitor tells (a lapse or an expiry marks every hold lost).
#include "base/callback_executor.hpp"
#include "locks/lock_core.hpp"
#include "queue/node_removals.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

void LockCore::release(bool shared) {
  (void)shared;
  Hold ended;
  {
    std::lock_guard lock(mutex_);
    auto found = holds_.find(std::this_thread::get_id());
    if (found == holds_.end()) {
      throw LockLost("lock " + name_ + ": unlock() by a thread that does not hold it");
    }
    if (found->second.count > 1) {
      --found->second.count;
      return;
    }
    if (found->second.lost) {
      holds_.erase(found);  // the nodes went with the session or go once it is back
      return;
    }
    ended = found->second;
  }
  // Local state goes only after the nodes are deleted or known gone (DESIGN's lock rules):
  // until then this thread still holds, as far as anyone can tell.
  remove_hold_nodes(ended);
  std::lock_guard lock(mutex_);
  holds_.erase(std::this_thread::get_id());
}

bool LockCore::held(bool shared) const {
  std::lock_guard lock(mutex_);
  const Hold* hold = hold_of_this_thread();
  if (hold == nullptr || hold->lost) return false;
  if (!shared && hold->shared) return false;
  // Not after a stall of this process long enough for the session to have ended, nor past
  // the moment the server may have ended it while disconnected (the monitor marks it soon).
  return liveness_.may_hold();
}

std::uint64_t LockCore::token(bool shared) {
  std::string proof;
  {
    if (!held(shared)) return 0;
    std::lock_guard lock(mutex_);
    const Hold* hold = hold_of_this_thread();
    if (hold->token != 0) return hold->token;
    // A soft writer's hold begins when its gate closes: readers may have held after its
    // node was queued.
    proof = hold->gate.empty() ? hold->node : hold->gate;
  }
  const auto stat = session_.exists(proof);
  if (!stat) return 0;  // gone with the session: not held
  std::lock_guard lock(mutex_);
  auto found = holds_.find(std::this_thread::get_id());
  if (found == holds_.end() || found->second.lost) return 0;
  found->second.token = static_cast<std::uint64_t>(stat->czxid);
  return found->second.token;
}

void LockCore::on_lost(std::function<void()> callback) {
  std::lock_guard lock(mutex_);
  lost_callbacks_.push_back(std::move(callback));
}

std::string LockCore::proof_of_hold(bool shared) const {
  if (!held(shared)) throw LockLost("lock " + name_ + " is not held by this thread");
  std::lock_guard lock(mutex_);
  return hold_of_this_thread()->node;
}

void LockCore::on_liveness(LivenessEvent event) {
  std::vector<std::function<void()>> to_call;
  {
    std::lock_guard lock(mutex_);
    switch (event) {
      case LivenessEvent::stalled:
      case LivenessEvent::confirmed: return;  // held() asks the monitor; waits need not look again
      case LivenessEvent::disconnected:
      case LivenessEvent::connected: break;
      case LivenessEvent::lapsed:
        // The server may have ended the session: another process may hold the lock now.
        // The session may also live on, so the nodes go to removals_.
        to_call = mark_lost(true);
        break;
      case LivenessEvent::expired:  // the ephemeral nodes are gone
        ++lost_generation_;
        to_call = mark_lost(false);
        break;
    }
    ++events_;
    ++session_events_;  // waiters look again: their own node may be lost too
    changed_.notify_all();
  }
  for (auto& callback : to_call) callbacks_->post(callback);
}

bool LockCore::needs_confirmation() const {
  // A hold taken on what an acquisition saw before a stall starts unconfirmed too (issue 35,
  // item 12).
  std::lock_guard lock(mutex_);
  return !holds_.empty() || acquiring_ != 0;
}

std::vector<std::function<void()>> LockCore::mark_lost(bool keep) {
  bool any = false;
  const auto generation = keep ? session_.generation() : 0;
  for (auto& [thread, hold] : holds_) {
    if (hold.lost) continue;
    any = true;
    if (keep) {
      if (!hold.gate.empty()) removals_->post(hold.gate, generation);
      removals_->post(hold.node, generation);
    }
    hold.lost = true;
  }
  return any ? lost_callbacks_ : std::vector<std::function<void()>>{};
}

std::vector<std::string> LockCore::nodes_of_live_holds() const {
  std::vector<std::string> nodes;
  for (const auto& [thread, hold] : holds_) {
    if (hold.lost) continue;  // gone with their session, or already with removals_
    if (!hold.gate.empty()) nodes.push_back(hold.gate);  // first: readers may enter then
    if (!hold.node.empty()) nodes.push_back(hold.node);
  }
  return nodes;
}

const LockCore::Hold* LockCore::hold_of_this_thread() const {
  auto found = holds_.find(std::this_thread::get_id());
  return found == holds_.end() ? nullptr : &found->second;
}

}  // namespace avout::detail
