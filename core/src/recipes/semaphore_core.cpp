// SemaphoreCore: opening a semaphore (its folder and count), acquiring a permit on the
// sequential-queue engine, releasing it, and what the session's liveness says of the permits.
#include "recipes/semaphore_core.hpp"
#include "base/back_off.hpp"
#include "base/callback_executor.hpp"
#include "queue/node_removals.hpp"
#include "recipes/claim_record.hpp"
#include "recipes/semaphore_record.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

SemaphoreCore::SemaphoreCore(ZooKeeperSession& session, SessionLiveness& liveness,
                             std::shared_ptr<CallbackExecutor> callbacks,
                             std::shared_ptr<NodeRemovals> removals, std::string name,
                             std::string folder, std::size_t n, MetricsRecorder metrics)
    : session_(session),
      liveness_(liveness),
      callbacks_(std::move(callbacks)),
      removals_(std::move(removals)),
      name_(std::move(name)),
      folder_(std::move(folder)),
      n_(n),
      queue_(session, folder_, permit_kind(), CreateMode::ephemeral_sequential),
      metrics_(std::move(metrics)) {}

SemaphoreCore::~SemaphoreCore() {
  if (subscription_ != 0) liveness_.unsubscribe(subscription_);
}

void SemaphoreCore::start() {
  session_.create_recursive(folder_);
  claim_count();
  removals_->start();  // before the liveness events that post to it
  subscription_ = liveness_.subscribe(*this);
}

void SemaphoreCore::claim_count() {
  // N is the semaphore's, not the handle's: every opener must name the one recorded.
  claim_record(
      session_, folder_, encode_permits(n_),
      [&](const Bytes& data) {
        const auto recorded = decode_permits(data);
        if (recorded == n_) return;
        throw Mismatch("semaphore " + name_ + ": opened with " + std::to_string(n_) +
                       " permits, but " +
                       (recorded ? "it was created with " + std::to_string(*recorded)
                                 : std::string("its node holds no permit count")));
      },
      "semaphore " + name_ + ": recording the permit count");
}

std::shared_ptr<PermitState> SemaphoreCore::acquire(const Deadline& deadline, bool once) {
  const auto started = metrics_.start();
  auto permit = acquire_permit(deadline, once);
  metrics_.lock_waited(LockKind::semaphore, started, permit != nullptr);
  return permit;
}

std::shared_ptr<PermitState> SemaphoreCore::acquire_permit(const Deadline& deadline, bool once) {
  {
    std::lock_guard lock(mutex_);
    ++acquiring_;
  }
  struct Done {
    SemaphoreCore& core;
    ~Done() {
      std::lock_guard lock(core.mutex_);
      --core.acquiring_;
    }
  } done{*this};
  // try_acquire's requests are bounded too: one session timeout.
  const Deadline bound =
      once ? deadline.no_later_than(Deadline::Clock::now() + session_.negotiated_timeout())
           : deadline;
  for (std::size_t attempt = 0;; ++attempt) {
    const std::string prefix = queue_.fresh_prefix();
    std::optional<std::string> node;
    try {
      node = queue_.create(prefix, {}, bound);
    } catch (const Timeout&) {
    }
    // Read after the create: one made while the session renewed lives in the new one.
    const auto generation = session_.generation();
    if (!node) {  // the deadline passed, a create perhaps in flight
      give_up(prefix, {}, generation);
      return nullptr;
    }
    bool vanished = false;
    bool holds = false;
    std::optional<std::uint64_t> token;
    try {
      holds = wait_turn(*node, bound, once, vanished);
      if (holds) token = token_of(*node, bound);
    } catch (...) {
      give_up(prefix, *node, generation);
      throw;
    }
    if (vanished || token == std::uint64_t{0}) continue;  // gone with its session: queue again
    if (!holds || !token) {
      give_up(prefix, *node, generation);
      return nullptr;
    }
    auto permit = std::make_shared<PermitState>(PermitState{*node, *token, generation});
    {
      std::lock_guard lock(mutex_);
      // Granted on what was seen before a lapse or an unconfirmed stall: not a hold to hand out.
      if (liveness_.may_hold()) {
        permits_.insert(permit);
        return permit;
      }
    }
    give_up(prefix, *node, generation);
    if (once || !back_off(attempt, deadline, outage_pauses)) return nullptr;
  }
}

bool SemaphoreCore::wait_turn(const std::string& node, const Deadline& deadline, bool once,
                              bool& vanished) {
  const HoldRule rule = HoldRule::first(n_);
  for (std::size_t losses = 0;;) {
    const auto seen = wake_->count();
    std::optional<Turn> turn;
    try {
      // Only the N nodes right ahead are watched (HoldRule::first): a deletion there may let
      // us in; one further ahead cannot, so it wakes nobody here (no herd).
      turn = queue_.turn(
          name_of(node), rule, [wake = wake_](const WatchEvent&) { wake->bump(); }, deadline);
    } catch (const ConnectionLoss&) {  // the session may well survive: ask again
      if (!wake_->wait_past(seen, deadline, back_off_pause(losses++, outage_pauses))) {
        return false;
      }
      continue;
    } catch (const SessionExpired&) {  // the renewed session answers next
      if (!wake_->wait_past(seen, deadline, back_off_pause(losses++, outage_pauses))) {
        return false;
      }
      continue;
    }
    if (!turn) return false;  // the deadline passed
    if (turn->vanished) {
      vanished = true;
      return false;
    }
    if (turn->holds) return true;
    if (once) return false;
    // Nothing to watch means a node to watch was gone already: look again at once.
    if (!turn->watch.empty() && !wake_->wait_past(seen, deadline, look_again_after)) return false;
    if (deadline.expired()) return false;
  }
}

std::optional<std::uint64_t> SemaphoreCore::token_of(const std::string& node,
                                                     const Deadline& deadline) {
  for (std::size_t losses = 0;; ++losses) {
    const auto seen = wake_->count();
    try {
      const ReplyDeadline replies(deadline);
      const auto stat = session_.exists(node);
      if (!stat) return std::uint64_t{0};
      return static_cast<std::uint64_t>(stat->czxid);
    } catch (const ConnectionLoss&) {
    } catch (const SessionExpired&) {
      return std::uint64_t{0};  // the node went with the session
    } catch (const Timeout&) {
      return std::nullopt;
    }
    if (!wake_->wait_past(seen, deadline, back_off_pause(losses, outage_pauses))) {
      return std::nullopt;
    }
  }
}

void SemaphoreCore::give_up(const std::string& prefix, const std::string& node,
                            std::uint64_t generation) {
  // Not confirmed within the grace (a lost reply, an outage): the node may still take a slot
  // while the session lives, so the removals send the delete again until it is gone.
  if (node.empty()) {  // a create whose outcome is unknown: found by its unique prefix
    (void)removals_->remove_created_now(queue_, prefix, generation, grace());
  } else {
    (void)removals_->remove_now(queue_, node, generation, grace());
  }
}

void SemaphoreCore::release(PermitState& permit) noexcept {
  bool lost = false;
  {
    std::lock_guard lock(mutex_);
    if (permit.released) return;
    permit.released = true;
    lost = permit.lost;  // its node went with its session, or to removals_ already
    for (auto it = permits_.begin(); it != permits_.end(); ++it) {
      if (it->get() == &permit) {
        permits_.erase(it);
        break;
      }
    }
  }
  if (!lost) (void)removals_->remove_now(queue_, permit.node, permit.generation, grace());
}

bool SemaphoreCore::held(const PermitState& permit) const {
  std::lock_guard lock(mutex_);
  // Not after a stall of this process long enough for the session to have ended, nor past
  // the moment the server may have ended it while disconnected (the monitor marks it soon).
  return !permit.released && !permit.lost && liveness_.may_hold();
}

void SemaphoreCore::on_lost(std::function<void()> callback) {
  std::lock_guard lock(mutex_);
  lost_callbacks_.push_back(std::move(callback));
}

Deadline SemaphoreCore::grace() const {
  // Undoing a step after the caller's deadline gets one session timeout: past it the server
  // may have ended the session, taking the node with it.
  return Deadline::after(session_.negotiated_timeout());
}

void SemaphoreCore::on_liveness(LivenessEvent event) {
  std::vector<std::function<void()>> to_call;
  if (event == LivenessEvent::lapsed || event == LivenessEvent::expired) {
    // The server may have ended the session (or did): another process may hold the permit.
    std::lock_guard lock(mutex_);
    bool any = false;
    for (const auto& permit : permits_) {
      if (permit->lost) continue;
      permit->lost = true;
      any = true;
      // After a lapse the session may live on, node and all; after an expiry it went with it
      // (the removals skip a node of an ended session).
      removals_->post(permit->node, permit->generation);
    }
    if (any) to_call = lost_callbacks_;
  }
  wake_->bump();  // waits look again: their own node may be gone too
  for (auto& callback : to_call) callbacks_->post(callback);
}

bool SemaphoreCore::needs_confirmation() const {
  std::lock_guard lock(mutex_);
  return !permits_.empty() || acquiring_ != 0;
}

}  // namespace avout::detail
