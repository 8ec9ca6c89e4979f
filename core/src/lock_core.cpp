#include "lock_core.hpp"

#include <avout/detail/atom_core.hpp>
#include <avout/detail/stm.hpp>
#include <avout/errors.hpp>

#include <algorithm>
#include <cstdio>

namespace avout::detail {

namespace {

// The sequence number ZooKeeper appended (the last 10 digits of a sequential node's name).
std::uint64_t sequence_of(const std::string& name) {
  if (name.size() < 10) return 0;
  return std::stoull(name.substr(name.size() - 10));
}

void sort_by_sequence(std::vector<std::string>& names) {
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return sequence_of(a) < sequence_of(b);
  });
}

std::string hex_id() {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(unique_writer_id()));
  return text;
}

std::string last_segment(const std::string& path) { return path.substr(path.rfind('/') + 1); }

}  // namespace

LockCore::LockCore(ZooKeeperSession& session, std::string name, std::string path,
                   std::optional<WriterPolicy> policy, std::chrono::milliseconds quiet_period,
                   std::shared_ptr<CallbackExecutor> callbacks)
    : session_(session),
      name_(std::move(name)),
      writers_(path + "/writers"),
      readers_(path + "/readers"),
      gate_(path + "/gate"),
      policy_(policy),
      quiet_period_(quiet_period),
      callbacks_(std::move(callbacks)) {}

LockCore::~LockCore() {
  if (listener_ != 0) session_.remove_listener(listener_);
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
  }
  if (watchdog_.joinable()) watchdog_.join();
}

void LockCore::start() {
  session_.create_recursive(writers_);
  if (policy_) session_.create_recursive(readers_);
  listener_ = session_.add_listener([weak = weak_from_this()](SessionState state) {
    if (auto self = weak.lock()) self->on_session(state);
  });
  watchdog_ = std::thread([this] { watch_disconnection(); });
}

void LockCore::on_session(SessionState state) {
  std::vector<std::function<void()>> to_call;
  std::vector<std::string> to_remove;
  {
    std::lock_guard lock(mutex_);
    ++events_;
    ++session_events_;
    if (state == SessionState::disconnected) {
      if (!disconnected_since_) disconnected_since_ = std::chrono::steady_clock::now();
    } else if (state == SessionState::connected) {
      disconnected_since_.reset();
      to_remove.swap(pending_removals_);
    } else {  // expired, auth_failed: the ephemeral nodes are gone
      ++lost_generation_;
      pending_removals_.clear();
      to_call = mark_lost();
    }
    changed_.notify_all();
  }
  // Nodes a release or a lapsed hold could not delete while disconnected: fire and forget
  // (this runs on the ZooKeeper thread, which must not wait for replies).
  for (const auto& node : to_remove) (void)session_.remove_async(node, 0);
  for (auto& callback : to_call) callbacks_->post(callback);
}

std::vector<std::function<void()>> LockCore::mark_lost() {
  bool any = false;
  for (auto& [thread, hold] : holds_) {
    any = any || !hold.lost;
    if (!hold.lost && disconnected_since_) {
      // The server may still keep the node if the session survives: delete it on reconnect.
      pending_removals_.push_back(hold.node);
      if (hold.owns_gate) pending_removals_.push_back(gate_);
    }
    hold.lost = true;
  }
  return any ? lost_callbacks_ : std::vector<std::function<void()>>{};
}

void LockCore::watch_disconnection() {
  // A hold is lost for good once the session timeout passes without a reconnect: the server
  // has (or soon will have) ended the session, and another process may hold the lock.
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (!disconnected_since_) {
      changed_.wait(lock, [&] { return stopping_ || disconnected_since_.has_value(); });
      continue;
    }
    const auto since = *disconnected_since_;
    const auto lapse = since + session_.options().session_timeout;
    changed_.wait_until(lock, lapse, [&] { return stopping_ || disconnected_since_ != since; });
    if (stopping_ || disconnected_since_ != since) continue;
    auto to_call = mark_lost();
    ++events_;
    changed_.notify_all();
    lock.unlock();
    for (auto& callback : to_call) callbacks_->post(callback);
    lock.lock();
    changed_.wait(lock, [&] { return stopping_ || disconnected_since_ != since; });
  }
}

WatchCallback LockCore::wake(std::shared_ptr<bool> fired) const {
  return [weak = std::weak_ptr<const LockCore>(weak_from_this()), fired](const WatchEvent&) {
    auto self = std::const_pointer_cast<LockCore>(weak.lock());
    if (!self) return;
    std::lock_guard lock(self->mutex_);
    if (fired) *fired = true;
    ++self->events_;
    self->changed_.notify_all();
  };
}

bool LockCore::wait_fired(const std::shared_ptr<bool>& fired, std::uint64_t session_seen,
                          std::chrono::steady_clock::time_point deadline) {
  // Only our own watch (or a session change) wakes us: other waiters' churn does not.
  std::unique_lock lock(mutex_);
  changed_.wait_until(lock, deadline, [&] { return *fired || session_events_ != session_seen; });
  return std::chrono::steady_clock::now() < deadline;
}

std::uint64_t LockCore::session_events() const {
  std::lock_guard lock(mutex_);
  return session_events_;
}

std::string LockCore::create_own(const std::string& folder, const std::string& prefix) {
  return find_or_create(folder, prefix + hex_id() + "-");
}

std::string LockCore::find_or_create(const std::string& folder, const std::string& own) {
  // The unique id in the name finds our node again when the create's reply was lost.
  for (int attempt = 0;; ++attempt) {
    try {
      return session_.create(folder + "/" + own, {}, CreateMode::ephemeral_sequential);
    } catch (const ConnectionLoss&) {
      if (attempt >= 5) throw;
      try {
        for (const auto& child : session_.children(folder)) {
          if (child.rfind(own, 0) == 0) return folder + "/" + child;
        }
      } catch (const ConnectionLoss&) {
      }
    }
  }
}

void LockCore::remove_own(const std::string& node) {
  // Dropped only once deleted or known gone with the session; an outage is waited out for
  // up to twice the session timeout, after which the reconnect deletes it.
  const auto give_up_at = std::chrono::steady_clock::now() + 2 * session_.options().session_timeout;
  while (true) {
    const auto seen = session_events();
    try {
      session_.remove(node, 0);  // ephemeral nodes of avout are never changed: version 0
      return;
    } catch (const NoNode&) {
      return;
    } catch (const SessionExpired&) {
      return;  // the node went with the session
    } catch (const ConnectionLoss&) {
    }
    if (!wait_fired(std::make_shared<bool>(false), seen, give_up_at)) {
      std::lock_guard lock(mutex_);
      pending_removals_.push_back(node);
      return;
    }
  }
}

const LockCore::Hold* LockCore::hold_of_this_thread() const {
  auto found = holds_.find(std::this_thread::get_id());
  return found == holds_.end() ? nullptr : &found->second;
}

bool LockCore::acquire(bool shared, std::chrono::steady_clock::time_point deadline) {
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(mutex_);
    auto found = holds_.find(std::this_thread::get_id());
    if (found != holds_.end() && found->second.lost) holds_.erase(found);
    else if (found != holds_.end()) {
      if (found->second.shared && !shared) {
        throw Error("lock " + name_ + ": this thread reads; asking to write would upgrade a read "
                    "hold, which can deadlock two readers");
      }
      ++found->second.count;  // reentrant (a writer may also read)
      return true;
    }
    generation = lost_generation_;
  }
  Hold hold;
  hold.shared = shared;
  const bool acquired = shared ? acquire_shared(deadline, hold) : acquire_exclusive(deadline, hold);
  if (!acquired) return false;
  std::lock_guard lock(mutex_);
  if (lost_generation_ != generation) {
    // The session expired while we acquired: the nodes are gone.
    throw LockLost("lock " + name_ + ": the ZooKeeper session expired while acquiring");
  }
  hold.count = 1;
  holds_[std::this_thread::get_id()] = hold;
  return true;
}

bool LockCore::acquire_exclusive(std::chrono::steady_clock::time_point deadline, Hold& hold) {
  // The create and the first listing travel together: the listing, later on the same
  // session, already holds our node, so an uncontended lock costs one round trip.
  const std::string own_prefix = "w-" + hex_id() + "-";
  auto created = session_.create_async(writers_ + "/" + own_prefix, {}, CreateMode::ephemeral_sequential);
  auto first_listing = session_.children_async(writers_);
  try {
    hold.node = session_.wait(created);
  } catch (const ConnectionLoss&) {
    hold.node = find_or_create(writers_, own_prefix);
  }
  std::optional<std::vector<std::string>> listed;
  try {
    listed = session_.wait(first_listing);
  } catch (const ConnectionLoss&) {
  }
  hold.token = sequence_of(hold.node) + 1;  // never 0: 0 means "not held"
  const std::string own = last_segment(hold.node);
  auto give_up = [&] {
    if (hold.owns_gate) remove_own(gate_);
    remove_own(hold.node);
  };
  try {
    while (true) {
      const auto seen = session_events();
      try {
        if (first_in_line(own, listed, seen, deadline)) break;
      } catch (const ConnectionLoss&) {
        // The session may well survive: wait for it to reconnect (or expire), then look again.
        listed.reset();
        if (!wait_fired(std::make_shared<bool>(false), seen, deadline)) {
          give_up();
          return false;
        }
        continue;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        give_up();
        return false;
      }
    }
    if (!policy_) return true;  // a plain mutex: first in line holds
    if (*policy_ == WriterPolicy::hard) {
      // Readers enter only while no writer is queued, so the queue itself is the gate:
      // successive writers keep new readers out. Wait for those inside to leave.
      if (!wait_for_readers_to_leave(deadline, false)) {
        give_up();
        return false;
      }
      return true;
    }
    while (true) {
      if (!wait_for_readers_to_leave(deadline, *policy_ == WriterPolicy::timed_soft)) {
        give_up();
        return false;
      }
      // Close the gate: readers arriving from now on wait.
      const auto seen = session_events();
      try {
        session_.create(gate_, {}, CreateMode::ephemeral);
        hold.owns_gate = true;
      } catch (const NodeExists&) {
        // A writer's gate whose owner is gone, until its session ends.
        auto fired = std::make_shared<bool>(false);
        if (session_.exists(gate_, wake(fired)) && !wait_fired(fired, seen, deadline)) {
          give_up();
          return false;
        }
        continue;
      } catch (const ConnectionLoss&) {
        if (session_.exists(gate_) && !hold.owns_gate) {
          // Our create may have landed: its owner tells.
          auto stat = session_.exists(gate_);
          hold.owns_gate = stat && stat->ephemeral_owner == session_.session_id();
        }
        if (!hold.owns_gate) continue;
      }
      // A reader may have entered between our look and the gate: look again.
      session_.sync(readers_);
      if (session_.children(readers_).empty()) return true;
      remove_own(gate_);
      hold.owns_gate = false;
    }
  } catch (...) {
    give_up();
    throw;
  }
}

bool LockCore::first_in_line(const std::string& own, std::optional<std::vector<std::string>>& listed,
                             std::uint64_t seen, std::chrono::steady_clock::time_point deadline) {
  auto children = listed ? std::move(*listed) : session_.children(writers_);
  listed.reset();
  sort_by_sequence(children);
  auto mine = std::find(children.begin(), children.end(), own);
  if (mine == children.end()) throw LockLost("lock " + name_ + ": its node vanished (session lost)");
  if (mine == children.begin()) return true;
  // Wait for the writer just before us only: no herd. Its deletion means "list again".
  const std::string predecessor = writers_ + "/" + *std::prev(mine);
  auto fired = std::make_shared<bool>(false);
  if (session_.exists(predecessor, wake(fired))) (void)wait_fired(fired, seen, deadline);
  return false;
}

bool LockCore::wait_for_readers_to_leave(std::chrono::steady_clock::time_point deadline,
                                         bool quiet) {
  while (true) {
    const auto seen = session_events();
    auto fired = std::make_shared<bool>(false);
    bool empty = false;
    try {
      session_.sync(readers_);
      empty = session_.children(readers_, wake(fired)).empty();
    } catch (const ConnectionLoss&) {
      if (!wait_fired(fired, seen, deadline)) return false;
      continue;
    }
    if (!empty) {
      if (!wait_fired(fired, seen, deadline)) return false;
      continue;
    }
    if (!quiet) return true;
    // timed_soft: take the lock only after a quiet period in which no reader came or went.
    const auto quiet_end = std::min(deadline, std::chrono::steady_clock::now() + quiet_period_);
    if (!wait_fired(fired, seen, quiet_end)) return quiet_end < deadline;  // quiet, or out of time
    if (std::chrono::steady_clock::now() >= deadline) return false;
  }
}

bool LockCore::acquire_shared(std::chrono::steady_clock::time_point deadline, Hold& hold) {
  const bool hard = *policy_ == WriterPolicy::hard;
  while (true) {
    const auto seen = session_events();
    auto fired = std::make_shared<bool>(false);
    try {
      hold.node = create_own(readers_, "r-");
      hold.token = sequence_of(hold.node) + 1;
      // The sync makes our view at least as new as our own create: a writer that queued
      // (hard) or closed the gate (soft) before it is seen; one that does so after sees us.
      session_.sync(hard ? writers_ : gate_);
      const bool open = hard ? session_.children(writers_, wake(fired)).empty()
                             : !session_.exists(gate_, wake(fired));
      if (open) return true;
    } catch (const ConnectionLoss&) {
      // Fall through: our node (if any) goes, and we look again after the reconnect.
    } catch (...) {
      if (!hold.node.empty()) remove_own(hold.node);
      throw;
    }
    if (!hold.node.empty()) remove_own(hold.node);
    hold.node.clear();
    if (!wait_fired(fired, seen, deadline)) return false;
  }
}

void LockCore::release(bool shared) {
  (void)shared;
  Hold ended;
  {
    std::lock_guard lock(mutex_);
    auto found = holds_.find(std::this_thread::get_id());
    if (found == holds_.end()) return;
    if (--found->second.count > 0) return;
    ended = found->second;
    holds_.erase(found);
  }
  if (ended.lost) return;
  // The gate first: readers may enter as soon as it is gone; then our place in line.
  if (ended.owns_gate) remove_own(gate_);
  remove_own(ended.node);
}

bool LockCore::held(bool shared) const {
  std::lock_guard lock(mutex_);
  const Hold* hold = hold_of_this_thread();
  if (hold == nullptr || hold->lost) return false;
  if (!shared && hold->shared) return false;
  // Disconnected longer than the session timeout: the server has ended the session.
  if (disconnected_since_ &&
      std::chrono::steady_clock::now() - *disconnected_since_ >= session_.options().session_timeout) {
    return false;
  }
  return true;
}

std::uint64_t LockCore::token(bool shared) const {
  if (!held(shared)) return 0;
  std::lock_guard lock(mutex_);
  return hold_of_this_thread()->token;
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

void guard_transaction(const GuardedBy& guard) {
  auto* transaction = Transaction::current();
  if (transaction == nullptr) throw NoTransaction("guarded_by needs a running dosync");
  const std::string node = guard.lock->proof_of_hold(guard.shared);
  transaction->add_to_commit({op::Check{node, 0}}, {}, [name = guard.lock->name()] {
    throw LockLost("lock " + name + " was lost before the transaction could commit");
  });
}

}  // namespace avout::detail

namespace avout {

void Lock::lock() {
  // No deadline in practice (a far one keeps condition-variable arithmetic finite); a lost
  // session ends the wait with LockLost.
  (void)acquire_until(std::chrono::steady_clock::now() + std::chrono::hours(24 * 365 * 10));
}

bool Lock::try_lock() { return acquire_until(std::chrono::steady_clock::now()); }

bool Lock::acquire_until(std::chrono::steady_clock::time_point deadline) {
  return core_->acquire(shared_, deadline);
}

void Lock::unlock() { core_->release(shared_); }

bool Lock::is_held() const { return core_->held(shared_); }

void Lock::ensure_held() const {
  if (!is_held()) throw LockLost("lock " + core_->name() + " is not held by this thread");
}

std::uint64_t Lock::fencing_token() const { return core_->token(shared_); }

void Lock::on_lost(std::function<void()> callback) { core_->on_lost(std::move(callback)); }

const std::string& Lock::name() const { return core_->name(); }

WriterPolicy ReadWriteLock::policy() const { return *writer_.core()->policy(); }

}  // namespace avout
