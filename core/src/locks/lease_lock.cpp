#include <avout/lease_lock.hpp>

#include "base/durations.hpp"
#include "locks/lease_keeper.hpp"

#include <algorithm>
#include <random>
#include <thread>

namespace avout {

namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr milliseconds longest_duration = std::chrono::hours(24 * 365);

// A waiter re-checks at least this often, so a released key is taken soon; jitter keeps
// many pollers from arriving in lockstep.
constexpr milliseconds poll_interval{10};

milliseconds jittered(milliseconds at_most) {
  thread_local std::minstd_rand random{std::random_device{}()};
  const auto low = std::max<milliseconds::rep>(1, at_most.count() / 2);
  std::uniform_int_distribution<milliseconds::rep> pick(low, std::max(low, at_most.count()));
  return milliseconds(pick(random));
}

}  // namespace

void validate_lease_key(const std::string& key) {
  auto reject = [&](const std::string& why) {
    throw InvalidName("invalid lease key \"" + key + "\": " + why);
  };
  if (key.empty()) reject("empty");
  if (key.size() > 256) reject("longer than 256 characters");
  if (key == "." || key == "..") reject("\".\" and \"..\" are not keys");
  for (unsigned char c : key) {
    if (c == '/') reject("'/' is not allowed");
    if (c < 0x21 || c > 0x7e) reject("only visible ASCII characters ('!' to '~') are allowed");
  }
}

void validate_lease_name(const std::string& name) {
  auto reject = [&](const char* why) {
    throw InvalidName("invalid lease lock name \"" + name + "\": " + why);
  };
  if (name.empty()) reject("empty");
  if (name.size() > 1024) reject("longer than 1024 characters");
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) reject("control characters are not allowed");
  }
}

void validate_lease_duration(milliseconds duration, const char* what) {
  detail::require_positive(duration, std::string("lease ") + what);
  if (duration > longest_duration) {
    throw InvalidDuration(std::string("lease ") + what + " of " + std::to_string(duration.count()) +
                          " ms is longer than a year");
  }
}

LeaseLock::LeaseLock(std::shared_ptr<LeaseStrategy> strategy) : strategy_(std::move(strategy)) {
  if (!strategy_) throw Error("LeaseLock needs a strategy");
  keeper_ = detail::make_lease_keeper(strategy_);
}

Lease LeaseLock::lock(const std::string& key, const LeaseOptions& options) {
  validate_lease_key(key);
  validate_lease_duration(options.duration, "duration");
  if (options.max_wait < milliseconds::zero() || options.max_wait > longest_duration) {
    throw InvalidDuration("lease max_wait must be between 0 and a year, got " +
                          std::to_string(options.max_wait.count()) + " ms");
  }
  const auto deadline = steady_clock::now() + options.max_wait;
  if (auto lease = strategy_->acquire(key, options.duration, deadline)) {
    keeper_->watch(*lease, options.duration, options.keep_alive);
    return std::move(*lease);
  }
  throw Timeout(strategy_->description() + ": key \"" + key + "\" still held after waiting " +
                std::to_string(options.max_wait.count()) + " ms");
}

std::optional<Lease> LeaseLock::try_lock(const std::string& key, milliseconds duration) {
  validate_lease_key(key);
  validate_lease_duration(duration, "duration");
  auto lease = strategy_->acquire(key, duration, steady_clock::time_point::min());
  if (lease) keeper_->watch(*lease, duration, false);
  return lease;
}

bool LeaseLock::unlock(const Lease& lease) {
  validate_lease_key(lease.key);
  keeper_->stop(lease);
  return strategy_->release(lease);
}

void LeaseLock::stop_keep_alive(const Lease& lease) { keeper_->stop_renewing(lease); }

bool LeaseLock::renew(Lease& lease, milliseconds duration) {
  validate_lease_key(lease.key);
  validate_lease_duration(duration, "duration");
  if (!strategy_->renew(lease, duration)) return false;
  keeper_->renewed(lease, duration);
  return true;
}

void LeaseLock::on_lost(std::function<void(const Lease&)> callback) {
  if (!callback) throw Error("LeaseLock::on_lost needs a callback");
  keeper_->on_lost(std::move(callback));
}

std::string LeaseLock::description() const { return strategy_->description(); }

namespace detail {

std::optional<Lease> poll_for_lease(
    steady_clock::time_point deadline,
    const std::function<std::optional<Lease>(milliseconds& retry_in)>& attempt) {
  while (true) {
    milliseconds retry_in = poll_interval;
    if (auto lease = attempt(retry_in)) return lease;
    const auto now = steady_clock::now();
    if (now >= deadline) return std::nullopt;
    const auto wait = jittered(std::clamp(retry_in, milliseconds(1), poll_interval));
    std::this_thread::sleep_until(std::min<steady_clock::time_point>(deadline, now + wait));
  }
}

}  // namespace detail

}  // namespace avout
