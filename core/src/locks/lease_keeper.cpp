#include "locks/lease_keeper.hpp"

#include "base/log.hpp"

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
  // The LeaseLocks' pointer shuts down; the schedule holds the keeper by weak_ptr only.
  return std::shared_ptr<LeaseKeeper>(keeper.get(),
                                      [keeper](LeaseKeeper*) { keeper->shut_down(); });
}

void LeaseKeeper::shut_down() {
  std::shared_ptr<LeaseStrategy> strategy;  // released here, not on the schedule's thread
  {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    // A callback that dropped the last LeaseLock runs on the lease callback thread, where no
    // other callback runs meanwhile: it must not wait for itself.
    const bool in_callback = LeaseSchedule::in_callback();
    idle_.wait(lock, [&] { return !renewing_ && (!calling_ || in_callback); });
    strategy = std::move(strategy_);
  }
}

std::optional<steady_clock::time_point> LeaseKeeper::earliest() const {
  std::optional<steady_clock::time_point> due;
  for (const auto& [id, watched] : watched_) {
    // A lease without keep-alive needs the schedule only to tell its loss.
    if (!watched.keep && callbacks_.empty()) continue;
    if (!due || watched.next < *due) due = watched.next;
  }
  return due;
}

void LeaseKeeper::queue(steady_clock::time_point due) {
  if (stopping_ || (queued_ && *queued_ <= due)) return;
  queued_ = due;
  LeaseSchedule::process().queue(due, weak_from_this());
}

void LeaseKeeper::watch(Lease& lease, milliseconds duration, bool keep) {
  lease.latest = std::make_shared<LeaseExpiry>();
  lease.latest->ticks = lease.expires.time_since_epoch().count();
  const auto now = steady_clock::now();
  std::lock_guard lock(mutex_);
  if (callbacks_.empty()) {
    // Unwatched ended leases would tell nobody: forget them rather than let them pile up.
    std::erase_if(watched_, [&](const auto& entry) {
      return !entry.second.keep && end_of(entry.second.lease) <= now;
    });
  }
  const auto next = keep ? next_renewal(now, duration) : lease.expires;
  watched_.insert_or_assign(Id{lease.key, lease.token}, Watched{lease, duration, keep, next});
  if (keep || !callbacks_.empty()) queue(next);
}

void LeaseKeeper::stop(const Lease& lease) {
  const Id id{lease.key, lease.token};
  std::unique_lock lock(mutex_);
  watched_.erase(id);
  untold_.erase(id);  // a loss not told yet is not told after the unlock
  const bool in_callback = LeaseSchedule::in_callback();
  idle_.wait(lock, [&] { return renewing_ != id && (calling_ != id || in_callback); });
}

void LeaseKeeper::stop_renewing(const Lease& lease) {
  const Id id{lease.key, lease.token};
  std::unique_lock lock(mutex_);
  const auto found = watched_.find(id);
  if (found == watched_.end() || !found->second.keep) return;
  found->second.keep = false;
  // A renewal in flight may still move the end; the check at the end finds it not due yet.
  found->second.next = end_of(found->second.lease);
  idle_.wait(lock, [&] { return renewing_ != id; });
}

void LeaseKeeper::renewed(const Lease& lease, milliseconds duration) {
  std::lock_guard lock(mutex_);
  const auto found = watched_.find(Id{lease.key, lease.token});
  if (found == watched_.end()) return;
  extend(*found->second.lease.latest, lease.expires);
  found->second.duration = duration;
  // A later end only: the queued check finds it not due yet and queues the new one.
  if (!found->second.keep) found->second.next = end_of(found->second.lease);
}

void LeaseKeeper::on_lost(std::function<void(const Lease&)> callback) {
  std::lock_guard lock(mutex_);
  callbacks_.push_back(std::move(callback));
  if (const auto due = earliest()) queue(*due);
}

std::optional<steady_clock::time_point> LeaseKeeper::serve(steady_clock::time_point at) {
  std::unique_lock lock(mutex_);
  if (stopping_ || queued_ != at) return std::nullopt;  // a stale entry: another is queued
  queued_.reset();
  while (!stopping_) {
    const auto due = std::min_element(watched_.begin(), watched_.end(), [](auto& a, auto& b) {
      return a.second.next < b.second.next;
    });
    if (due == watched_.end() || steady_clock::now() < due->second.next) break;
    handle(lock, due->first);
  }
  const auto next = earliest();
  if (stopping_ || !next || (queued_ && *queued_ <= *next)) return std::nullopt;
  queued_ = next;
  return next;
}

namespace {
thread_local bool in_lease_callback = false;
}  // namespace

LeaseSchedule& LeaseSchedule::process() {
  static LeaseSchedule schedule;
  return schedule;
}

bool LeaseSchedule::in_callback() { return in_lease_callback; }

LeaseSchedule::~LeaseSchedule() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LeaseSchedule::queue(steady_clock::time_point at, std::weak_ptr<LeaseKeeper> keeper) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    due_.push(Entry{at, std::move(keeper)});
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }
  changed_.notify_all();
}

void LeaseSchedule::post_callback(std::function<void()> task) {
  std::lock_guard lock(mutex_);
  if (stopping_) return;
  if (!callbacks_) callbacks_ = std::make_unique<CallbackExecutor>();
  callbacks_->post(std::move(task));
}

void LeaseSchedule::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (due_.empty()) {
      changed_.wait(lock);
      continue;
    }
    const auto at = due_.top().at;
    if (steady_clock::now() < at) {
      changed_.wait_until(lock, at);
      continue;
    }
    auto keeper = due_.top().keeper.lock();
    due_.pop();
    if (!keeper) continue;  // its LeaseLock is gone
    // Keepers are served with this mutex released: they queue their times themselves.
    lock.unlock();
    const auto next = keeper->serve(at);
    if (next) queue(*next, keeper);
    keeper.reset();
    lock.lock();
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
      lose(found);
    }
    return;
  }
  Lease lease = found->second.lease;
  const auto duration = found->second.duration;
  LeaseStrategy* const strategy = strategy_.get();
  renewing_ = id;
  lock.unlock();
  std::optional<bool> renewed;  // nullopt: the store failed, the outcome is unknown
  try {
    // shut_down waits for renewing_ to clear before it releases the strategy.
    renewed = strategy->renew(lease, duration);
  } catch (const std::exception&) {
  }
  lock.lock();
  renewing_.reset();
  idle_.notify_all();
  found = watched_.find(id);
  if (stopping_ || found == watched_.end()) return;  // unlocked or shut down: nothing to tell
  const auto now = steady_clock::now();
  if (renewed == true) {
    extend(*found->second.lease.latest, lease.expires);
    found->second.next = next_renewal(now, duration);
  } else if (renewed == false || now >= end_of(found->second.lease)) {
    lose(found);
  } else {
    found->second.next = next_retry(now, duration, end_of(found->second.lease));
  }
}

void LeaseKeeper::lose(std::map<Id, Watched>::iterator found) {
  const Id id = found->first;
  Lease lost = std::move(found->second.lease);
  watched_.erase(found);
  cut(*lost.latest, steady_clock::now());
  if (callbacks_.empty()) return;
  untold_.insert(id);
  // Posted, not called: this is the schedule's thread, and a callback that blocks here would
  // hold up the renewals of every lease of the process.
  LeaseSchedule::process().post_callback(
      [keeper = shared_from_this(), callbacks = callbacks_, lost = std::move(lost)] {
        keeper->tell(callbacks, lost);
      });
}

void LeaseKeeper::tell(const std::vector<std::function<void(const Lease&)>>& callbacks,
                       const Lease& lost) {
  const Id id{lost.key, lost.token};
  std::unique_lock lock(mutex_);
  // Unlocked or shut down since the loss: nobody is to be told any more.
  if (stopping_ || untold_.erase(id) == 0) return;
  calling_ = id;
  for (const auto& callback : callbacks) {
    if (stopping_) break;  // a callback dropped the last LeaseLock: no callback follows
    lock.unlock();
    in_lease_callback = true;
    // One callback's failure is logged; the others are still called.
    run_logging_errors({}, "a LeaseLock on_lost callback", [&] { callback(lost); });
    in_lease_callback = false;
    lock.lock();
  }
  calling_.reset();
  idle_.notify_all();
}

}  // namespace avout::detail
