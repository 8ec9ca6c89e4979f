// Lease keep-alive and on_lost against real servers, for the ZooKeeper, Redis and PostgreSQL
// strategies, and against a strategy in memory: kept leases outlive their duration, lost ones
// are told once and off the renewal thread, unlock and stop_keep_alive stop the renewals, and
// one thread serves every LeaseLock of the process. Store outages: lease_outage_test.cpp.
#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include "support/lease_contenders.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using avout::testing::scaled;
using Clock = std::chrono::steady_clock;

namespace {

using Kind = avout::testing::LeaseStoreKind;
const auto& all_kinds = avout::testing::all_lease_stores;
const auto kind_name = avout::testing::lease_store_name;

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/lease-renewal-test", stem);
}

using Contender = avout::testing::LeaseContender;

using LossLog = avout::testing::LeaseLossLog;

std::ptrdiff_t thread_count() {
  const std::filesystem::directory_iterator tasks("/proc/self/task");
  return std::distance(begin(tasks), end(tasks));
}

}  // namespace

namespace {

// A strategy in memory that counts renewal requests per token: what the keeper sends, seen
// without a server. A renewal it sees for a released token is the bug under test. With
// `ends_leases`, it judges expiry as a store would: a lease not renewed by its end is over,
// its key free for the next acquire and its renewal refused.
class CountingStrategy : public avout::LeaseStrategy {
 public:
  explicit CountingStrategy(bool ends_leases = false) : ends_leases_(ends_leases) {}
  std::string description() const override { return "counting"; }
  std::optional<avout::Lease> acquire(const std::string& key, std::chrono::milliseconds duration,
                                      Clock::time_point) override {
    std::lock_guard lock(mutex_);
    if (held_.count(key) && !ended(key)) return std::nullopt;
    held_[key] = {++tokens_, Clock::now() + duration};
    return avout::Lease{key, tokens_, held_[key].second};
  }
  bool release(const avout::Lease& lease) override {
    std::lock_guard lock(mutex_);
    released_.insert(lease.token);
    if (!holds(lease)) return false;
    held_.erase(lease.key);
    return true;
  }
  bool renew(avout::Lease& lease, std::chrono::milliseconds duration) override {
    std::lock_guard lock(mutex_);
    ++renewals_[lease.token];
    if (released_.count(lease.token)) ++after_release_;
    if (!holds(lease)) return false;
    lease.expires = held_[lease.key].second = Clock::now() + duration;
    return true;
  }
  int renewals(std::uint64_t token) {
    std::lock_guard lock(mutex_);
    return renewals_[token];
  }
  int after_release() {
    std::lock_guard lock(mutex_);
    return after_release_;
  }

 private:
  // Called with mutex_ held.
  bool ended(const std::string& key) { return ends_leases_ && Clock::now() >= held_[key].second; }
  bool holds(const avout::Lease& lease) {
    const auto found = held_.find(lease.key);
    return found != held_.end() && found->second.first == lease.token && !ended(lease.key);
  }

  const bool ends_leases_;
  std::mutex mutex_;
  std::uint64_t tokens_ = 0;
  std::map<std::string, std::pair<std::uint64_t, Clock::time_point>> held_;  // token, end
  std::set<std::uint64_t> released_;
  std::map<std::uint64_t, int> renewals_;
  int after_release_ = 0;
};

// A CountingStrategy whose renewals hang while `stall` is set, as a store that stopped
// answering would: the keeper's one thread is held up in them.
class StallingStrategy : public CountingStrategy {
 public:
  std::atomic<bool> stall{false};  ///< renewals wait while set (30 s at most)
  bool renew(avout::Lease& lease, std::chrono::milliseconds duration) override {
    const auto until = Clock::now() + scaled(30s);
    while (stall && Clock::now() < until) std::this_thread::sleep_for(5ms);
    return CountingStrategy::renew(lease, duration);
  }
};

}  // namespace

TEST_CASE("a kept lease outlives several durations and nobody else takes it meanwhile") {
  for (Kind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    const std::string name = unique_name("kept");
    Contender holder(kind, name);
    Contender other(kind, name);
    LossLog losses;
    losses.attach(*holder.leases);
    const auto duration = scaled(1s);
    const auto lease = holder->lock("k", {.duration = duration, .keep_alive = true});
    const auto started = Clock::now();
    while (Clock::now() - started < 4 * duration) {
      CHECK_FALSE(other->try_lock("k", 1s));
      CHECK(lease.running());
      std::this_thread::sleep_for(duration / 5);
    }
    CHECK(lease.latest_expiry() > lease.expires + 2 * duration);
    CHECK(losses.count() == 0);
    CHECK(holder->unlock(lease));
    const auto next = other->try_lock("k", 1s);
    REQUIRE(next);
    CHECK(next->token > lease.token);
    CHECK(other->unlock(*next));
  }
}

TEST_CASE("without keep-alive a lease ends and on_lost fires once") {
  for (Kind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    const std::string name = unique_name("ends");
    Contender holder(kind, name);
    Contender other(kind, name);
    LossLog losses;
    losses.attach(*holder.leases);
    const auto duration = scaled(500ms);
    const auto lease = holder->lock("k", {.duration = duration});
    REQUIRE(losses.wait_for(1, scaled(10s)));
    CHECK_FALSE(lease.running());
    const auto taken = other->lock("k", {.duration = scaled(30s), .max_wait = scaled(10s)});
    CHECK(taken.token > lease.token);
    std::this_thread::sleep_for(duration);
    CHECK(losses.count() == 1);
    CHECK(losses.tokens.front() == lease.token);
    CHECK_FALSE(holder->unlock(lease));
    CHECK(other->unlock(taken));
  }
}

TEST_CASE("a lease taken over once its holder stopped renewing is lost: on_lost fires") {
  // The holder renews by hand, then stops (as a stalled renewer would): the contender takes
  // the key once it ended, the holder is told once, and its late renew is refused.
  for (Kind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    const std::string name = unique_name("stolen");
    Contender holder(kind, name);
    Contender other(kind, name);
    LossLog losses;
    losses.attach(*holder.leases);
    const auto duration = scaled(1s);
    auto lease = holder->lock("k", {.duration = duration});
    for (int i = 0; i < 3; ++i) {
      std::this_thread::sleep_for(duration / 3);
      REQUIRE(holder->renew(lease, duration));
    }
    CHECK(losses.count() == 0);  // the renewals moved the end on_lost waits for
    const auto taken = other->lock("k", {.duration = scaled(30s), .max_wait = scaled(10s)});
    REQUIRE(losses.wait_for(1, scaled(10s)));
    CHECK(losses.tokens.front() == lease.token);
    CHECK_FALSE(lease.running());
    CHECK_FALSE(holder->renew(lease, duration));
    CHECK_FALSE(other->try_lock("k", 1s));  // the refused renew left the new hold alone
    std::this_thread::sleep_for(duration / 2);
    CHECK(losses.count() == 1);
    CHECK(other->unlock(taken));
  }
}

TEST_CASE("a kept lease whose renewals stalled is taken over: on_lost fires for it") {
  // The keeper's thread is held up by a renewal that hangs (another LeaseLock's store not
  // answering), as a stalled process would be: the kept lease ends at the store and a
  // contender takes it; the renewal made afterwards is refused and the holder is told.
  for (Kind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    const std::string name = unique_name("stalled");
    Contender holder(kind, name);
    Contender other(kind, name);
    auto stalling = std::make_shared<StallingStrategy>();
    avout::LeaseLock stuck(stalling);
    LossLog losses;
    losses.attach(*holder.leases);
    const auto duration = scaled(1s);
    const auto kept = holder->lock("k", {.duration = duration, .keep_alive = true});
    stalling->stall = true;
    const auto hanging = stuck.lock("s", {.duration = duration / 10, .keep_alive = true});
    const auto taken = other->lock("k", {.duration = scaled(30s), .max_wait = scaled(20s)});
    stalling->stall = false;
    REQUIRE(losses.wait_for(1, scaled(10s)));
    CHECK(losses.tokens[0] == kept.token);
    CHECK_FALSE(kept.running());
    CHECK_FALSE(other->try_lock("k", 1s));  // the refused renewal left the new hold alone
    CHECK(other->unlock(taken));
    CHECK_FALSE(holder->unlock(kept));
    CHECK(stuck.unlock(hanging));
  }
}

TEST_CASE("unlock stops the renewals: none follows, on_lost is not called") {
  for (Kind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    const std::string name = unique_name("unlock");
    Contender holder(kind, name);
    Contender other(kind, name);
    LossLog losses;
    losses.attach(*holder.leases);
    const auto duration = scaled(300ms);
    for (int i = 0; i < 5; ++i) {
      const auto lease = holder->lock("k", {.duration = duration, .keep_alive = true});
      std::this_thread::sleep_for(duration / 2);
      CHECK(holder->unlock(lease));
    }
    // A renewal after unlock would be refused and reported as a loss; the store still
    // lets another take the key at once.
    const auto next = other->try_lock("k", scaled(30s));  // outlasts the wait below
    REQUIRE(next);
    std::this_thread::sleep_for(3 * duration);
    CHECK(losses.count() == 0);
    CHECK(other->unlock(*next));
  }
}

TEST_CASE("unlock stops the renewals: a counting strategy sees none after a release") {
  auto strategy = std::make_shared<CountingStrategy>();
  avout::LeaseLock leases(strategy);
  LossLog losses;
  losses.attach(leases);
  std::vector<avout::Lease> held;
  for (int i = 0; i < 20; ++i) {
    held.push_back(leases.lock("k" + std::to_string(i), {.duration = 300ms, .keep_alive = true}));
  }
  std::this_thread::sleep_for(500ms);
  for (const auto& lease : held) {
    CHECK(strategy->renewals(lease.token) > 0);  // kept: renewed every 100 ms meanwhile
    CHECK(leases.unlock(lease));
  }
  std::this_thread::sleep_for(500ms);
  CHECK(strategy->after_release() == 0);
  CHECK(losses.count() == 0);
}

TEST_CASE("an on_lost callback that blocks delays no renewal of another lease") {
  // on_lost runs off the renewal thread: while one lease's callback blocks for many lease
  // lengths, the kept leases of the same LeaseLock and of another one are renewed all along.
  auto strategy = std::make_shared<CountingStrategy>(true);
  avout::LeaseLock blocked(strategy);
  avout::LeaseLock other(strategy);
  std::atomic<bool> blocking{false};
  std::atomic<bool> unblock{false};
  blocked.on_lost([&](const avout::Lease& lost) {
    if (lost.key != "short") return;
    blocking = true;
    const auto until = Clock::now() + scaled(30s);
    while (!unblock && Clock::now() < until) std::this_thread::sleep_for(5ms);
  });
  LossLog losses;
  losses.attach(other);
  const auto duration = scaled(1s);
  const auto same = blocked.lock("same", {.duration = duration, .keep_alive = true});
  const auto kept = other.lock("kept", {.duration = duration, .keep_alive = true});
  (void)blocked.lock("short", {.duration = duration / 10});
  const auto until = Clock::now() + scaled(10s);
  while (!blocking && Clock::now() < until) std::this_thread::sleep_for(5ms);
  REQUIRE(blocking);
  const auto started = Clock::now();
  while (Clock::now() - started < 4 * duration) {
    CHECK(kept.running());
    CHECK(same.running());
    std::this_thread::sleep_for(duration / 5);
  }
  CHECK(kept.latest_expiry() > kept.expires + 2 * duration);
  CHECK(same.latest_expiry() > same.expires + 2 * duration);
  avout::LeaseLock third(strategy);
  CHECK_FALSE(third.try_lock("kept", duration));  // the store still sees both held
  CHECK_FALSE(third.try_lock("same", duration));
  CHECK(losses.count() == 0);
  unblock = true;
  CHECK(other.unlock(kept));
  CHECK(blocked.unlock(same));
}

TEST_CASE("a loss not told yet when unlock returns is never told") {
  // A blocking callback holds the lease callback thread while a second lease is lost: its
  // callback waits in line, and the unlock made meanwhile cancels it.
  auto strategy = std::make_shared<CountingStrategy>(true);
  avout::LeaseLock leases(strategy);
  std::atomic<bool> blocking{false};
  std::atomic<bool> unblock{false};
  leases.on_lost([&](const avout::Lease& lost) {
    if (lost.key != "first") return;
    blocking = true;
    const auto until = Clock::now() + scaled(30s);
    while (!unblock && Clock::now() < until) std::this_thread::sleep_for(5ms);
  });
  LossLog losses;
  losses.attach(leases);
  (void)leases.lock("first", {.duration = 20ms});
  const auto until = Clock::now() + scaled(10s);
  while (!blocking && Clock::now() < until) std::this_thread::sleep_for(5ms);
  REQUIRE(blocking);
  const auto second = leases.lock("second", {.duration = 20ms});
  while (second.running()) std::this_thread::sleep_for(5ms);  // lost: its callback queued
  std::this_thread::sleep_for(100ms);
  CHECK_FALSE(leases.unlock(second));
  unblock = true;
  REQUIRE(losses.wait_for(1, scaled(10s)));
  std::this_thread::sleep_for(200ms);
  CHECK(losses.count() == 1);  // the first lease's, told once unblocked; not the second's
}

TEST_CASE("stop_keep_alive keeps the hold until its end, then on_lost fires once") {
  auto strategy = std::make_shared<CountingStrategy>(true);
  avout::LeaseLock leases(strategy);
  LossLog losses;
  losses.attach(leases);
  const auto duration = scaled(300ms);
  const auto lease = leases.lock("k", {.duration = duration, .keep_alive = true});
  std::this_thread::sleep_for(2 * duration);
  leases.stop_keep_alive(lease);
  const auto renewals = strategy->renewals(lease.token);
  CHECK(renewals > 0);
  const auto end = lease.latest_expiry();
  avout::LeaseLock other(strategy);
  if (auto early = other.try_lock("k", duration)) {  // only once the lease ended
    CHECK(Clock::now() >= end);
    CHECK(other.unlock(*early));
  }
  REQUIRE(losses.wait_for(1, scaled(10s)));
  CHECK(Clock::now() >= end);
  CHECK(losses.tokens.front() == lease.token);
  CHECK(strategy->renewals(lease.token) == renewals);  // none since stop_keep_alive
  const auto next = other.try_lock("k", duration);
  REQUIRE(next);  // the store ended it too
  CHECK_FALSE(leases.unlock(lease));
  CHECK(other.unlock(*next));
  std::this_thread::sleep_for(duration / 2);
  CHECK(losses.count() == 1);
}

TEST_CASE("an on_lost callback may drop the last copy of its LeaseLock") {
  auto strategy = std::make_shared<CountingStrategy>();
  auto leases = std::make_unique<avout::LeaseLock>(strategy);
  std::atomic<bool> locked{false};
  std::atomic<bool> dropped{false};
  leases->on_lost([&](const avout::Lease&) {
    while (!locked) std::this_thread::sleep_for(1ms);  // lock() has returned
    leases.reset();  // on the lease callback thread: the keeper ends once this returns
    dropped = true;
  });
  (void)leases->lock("k", {.duration = 20ms});
  locked = true;
  const auto until = Clock::now() + scaled(10s);
  while (!dropped && Clock::now() < until) std::this_thread::sleep_for(10ms);
  CHECK(dropped);
  std::this_thread::sleep_for(100ms);  // the detached thread is gone before the test ends
}

TEST_CASE("200 LeaseLocks of different names, each keeping a lease, add fewer than 5 threads") {
  // One keeper thread serves the process: 200 LeaseLocks in each store (one client or store
  // per kind, whose own threads are started before counting) add it at most, not 600.
  std::vector<Contender> stores;
  stores.reserve(std::size(all_kinds));
  for (Kind kind : all_kinds) {
    stores.emplace_back(kind, unique_name("threads-warmup"));
    const auto lease = stores.back()->try_lock("warmup", 1s);  // the store's threads start
    REQUIRE(lease);
    CHECK(stores.back()->unlock(*lease));
  }
  const auto before = thread_count();
  std::vector<std::pair<avout::LeaseLock, avout::Lease>> kept;
  for (auto& store : stores) {
    for (int i = 0; i < 200; ++i) {
      const auto name = unique_name("threads-" + std::to_string(i));
      auto leases = store.lease_lock(name);
      auto lease = leases.lock("k", {.duration = scaled(30s), .keep_alive = true});
      kept.emplace_back(std::move(leases), std::move(lease));
    }
  }
  const auto holding = thread_count();
  MESSAGE("threads before: " << before << ", while 600 LeaseLocks keep a lease: " << holding);
  CHECK(holding - before < 5);
  for (auto& [leases, lease] : kept) CHECK(leases.unlock(lease));
}
