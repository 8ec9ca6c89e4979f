#include "locks/lease_keeper.hpp"

#include <algorithm>
#include <exception>

namespace avout::detail {

namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

steady_clock::time_point end_of(const Lease& lease) { return lease.latest_expiry(); }

// Moves a shared expiry later only: a keep-alive and an explicit renew may race.
void extend(LeaseExpiry& expiry, steady_clock::time_point to) {
  auto seen = expiry.ticks.load();
  const auto wanted = to.time_since_epoch().count();
  while (seen < wanted && !expiry.ticks.compare_exchange_weak(seen, wanted)) {
  }
}

// Moves a shared expiry earlier only: a lost lease no longer runs.
void cut(LeaseExpiry& expiry, steady_clock::time_point to) {
  auto seen = expiry.ticks.load();
  const auto wanted = to.time_since_epoch().count();
  while (seen > wanted && !expiry.ticks.compare_exchange_weak(seen, wanted)) {
  }
}

}  // namespace

steady_clock::time_point next_renewal(steady_clock::time_point now, milliseconds duration) {
  return now + std::max(milliseconds(1), duration / 3);
}

steady_clock::time_point next_retry(steady_clock::time_point now, milliseconds duration,
                                    steady_clock::time_point end) {
  const auto pause = std::clamp(duration / 10, milliseconds(1), milliseconds(1000));
  return std::max(now, std::min(now + pause, end));
}

LeaseKeeper::LeaseKeeper(std::shared_ptr<LeaseStrategy> strategy)
    : strategy_(std::move(strategy)) {}

std::shared_ptr<LeaseKeeper> make_lease_keeper(std::shared_ptr<LeaseStrategy> strategy) {
  auto keeper = std::make_shared<LeaseKeeper>(std::move(strategy));
  // The LeaseLocks' pointer only shuts down; the thread's own pointer frees the keeper.
  return std::shared_ptr<LeaseKeeper>(keeper.get(),
                                      [keeper](LeaseKeeper*) { keeper->shut_down(); });
}

void LeaseKeeper::shut_down() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (!thread_.joinable()) return;
  // A callback that dropped the last LeaseLock runs on this very thread: it ends by itself,
  // holding the keeper until then.
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

void LeaseKeeper::watch(Lease& lease, milliseconds duration, bool keep) {
  lease.latest = std::make_shared<LeaseExpiry>();
  lease.latest->ticks = lease.expires.time_since_epoch().count();
  const auto now = steady_clock::now();
  {
    std::lock_guard lock(mutex_);
    watched_.insert_or_assign(
        Id{lease.key, lease.token},
        Watched{lease, duration, keep, keep ? next_renewal(now, duration) : lease.expires});
    if (!thread_.joinable() && !stopping_) {
      thread_ = std::thread([self = shared_from_this()] { self->run(); });
    }
  }
  changed_.notify_all();
}

void LeaseKeeper::stop(const Lease& lease) {
  const Id id{lease.key, lease.token};
  std::unique_lock lock(mutex_);
  watched_.erase(id);
  changed_.wait(lock, [&] { return renewing_ != id; });
}

void LeaseKeeper::renewed(const Lease& lease, milliseconds duration) {
  {
    std::lock_guard lock(mutex_);
    const auto found = watched_.find(Id{lease.key, lease.token});
    if (found == watched_.end()) return;
    extend(*found->second.lease.latest, lease.expires);
    found->second.duration = duration;
    if (!found->second.keep) found->second.next = end_of(found->second.lease);
  }
  changed_.notify_all();
}

void LeaseKeeper::on_lost(std::function<void(const Lease&)> callback) {
  std::lock_guard lock(mutex_);
  callbacks_.push_back(std::move(callback));
}

void LeaseKeeper::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (watched_.empty()) {
      changed_.wait(lock);
      continue;
    }
    const auto due = std::min_element(watched_.begin(), watched_.end(), [](auto& a, auto& b) {
      return a.second.next < b.second.next;
    });
    if (steady_clock::now() < due->second.next) {
      changed_.wait_until(lock, due->second.next);
      continue;
    }
    handle(lock, due->first);
  }
}

void LeaseKeeper::handle(std::unique_lock<std::mutex>& lock, const Id& id) {
  auto found = watched_.find(id);
  if (!found->second.keep) {
    // An explicit renew may have moved the end since this check was scheduled.
    const auto end = end_of(found->second.lease);
    if (steady_clock::now() < end) {
      found->second.next = end;
    } else {
      lose(lock, found);
    }
    return;
  }
  Lease lease = found->second.lease;
  const auto duration = found->second.duration;
  renewing_ = id;
  lock.unlock();
  std::optional<bool> renewed;  // nullopt: the store failed, the outcome is unknown
  try {
    renewed = strategy_->renew(lease, duration);
  } catch (const std::exception&) {
  }
  lock.lock();
  renewing_.reset();
  changed_.notify_all();
  found = watched_.find(id);
  if (stopping_ || found == watched_.end()) return;  // unlocked or shut down: nothing to tell
  const auto now = steady_clock::now();
  if (renewed == true) {
    extend(*found->second.lease.latest, lease.expires);
    found->second.next = next_renewal(now, duration);
  } else if (renewed == false || now >= end_of(found->second.lease)) {
    lose(lock, found);
  } else {
    found->second.next = next_retry(now, duration, end_of(found->second.lease));
  }
}

void LeaseKeeper::lose(std::unique_lock<std::mutex>& lock, std::map<Id, Watched>::iterator found) {
  Lease lost = std::move(found->second.lease);
  watched_.erase(found);
  cut(*lost.latest, steady_clock::now());
  const auto callbacks = callbacks_;
  lock.unlock();
  for (const auto& callback : callbacks) {
    try {
      callback(lost);
    } catch (...) {
      // A callback's failure must not end the keep-alive of the other leases.
    }
  }
  lock.lock();
}

}  // namespace avout::detail
