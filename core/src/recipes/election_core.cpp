// ElectionCore: opening an election, the questions asked of a leadership, and what the
// session's liveness monitor tells (a lapse or an expiry ends a leadership).
#include "recipes/election_core.hpp"
#include "queue/node_removals.hpp"
#include "recipes/election_names.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

ElectionCore::ElectionCore(ZooKeeperSession& session, SessionLiveness& liveness,
                           std::shared_ptr<CallbackExecutor> callbacks,
                           std::shared_ptr<NodeRemovals> removals, std::string name,
                           std::string folder, std::string id)
    : session_(session),
      liveness_(liveness),
      callbacks_(std::move(callbacks)),
      removals_(std::move(removals)),
      name_(std::move(name)),
      folder_(std::move(folder)),
      id_(std::move(id)),
      queue_(session, folder_, candidate_kind(), CreateMode::ephemeral_sequential) {}

void ElectionCore::start() {
  session_.create_recursive(folder_);
  removals_->start();  // before the liveness events that post to it
  subscription_ = liveness_.subscribe(*this);
}

ElectionCore::~ElectionCore() {
  if (subscription_ != 0) liveness_.unsubscribe(subscription_);
  try {
    resign();
  } catch (const Error&) {  // the session ends some day and takes the node with it
  }
}

bool ElectionCore::is_leader() const {
  std::lock_guard lock(mutex_);
  // Not after a stall long enough for the session to have ended, nor past the lapse of a
  // disconnect (the monitor tells the lapse soon; may_hold knows it already).
  return leading_ && liveness_.may_hold();
}

std::uint64_t ElectionCore::fencing_token() const {
  std::lock_guard lock(mutex_);
  return leading_ && liveness_.may_hold() ? token_ : 0;
}

std::string ElectionCore::proof_of_leadership() const {
  std::lock_guard lock(mutex_);
  if (!leading_ || !liveness_.may_hold() || !node_) {
    throw LockLost("election " + name_ + ": " + id_ + " does not lead");
  }
  return *node_;
}

void ElectionCore::on_revoked(std::function<void()> callback) {
  std::lock_guard lock(mutex_);
  revoked_callbacks_.push_back(std::move(callback));
}

Deadline ElectionCore::default_deadline() const {
  return Deadline::after(2 * session_.negotiated_timeout());
}

Deadline ElectionCore::grace() const {
  // Past one session timeout the server may have ended the session, taking the node along.
  return Deadline::after(session_.negotiated_timeout());
}

void ElectionCore::on_liveness(LivenessEvent event) {
  std::vector<std::function<void()>> to_call;
  {
    std::lock_guard lock(mutex_);
    const bool was_leading = leading_;
    switch (event) {
      case LivenessEvent::disconnected:
      case LivenessEvent::stalled:
      case LivenessEvent::confirmed:
      case LivenessEvent::connected: break;  // is_leader asks the monitor
      case LivenessEvent::lapsed:
        // The server may have ended the session: another candidate may lead by now. The
        // session may also live on, keeping our node first in line: the removals delete it
        // once the session answers (a campaign meanwhile queues behind it).
        if (leading_) {
          removals_->post(*node_, node_generation_);
          node_.reset();
          leading_ = false;
        }
        break;
      case LivenessEvent::expired:
        // The ended session's nodes are gone; a node a campaign made in the renewed one stays.
        if (node_ && session_.ended_since(node_generation_)) {
          node_.reset();
          leading_ = false;
        }
        break;
    }
    if (was_leading && !leading_) {
      token_ = 0;
      to_call = revoked_callbacks_;
    }
  }
  wake_->bump();  // a campaign looks again
  for (auto& callback : to_call) callbacks_->post(callback);
}

bool ElectionCore::needs_confirmation() const {
  std::lock_guard lock(mutex_);
  return node_.has_value();
}

}  // namespace avout::detail
