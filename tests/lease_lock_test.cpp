// Lease locks against real servers: the same cases for the ZooKeeper, Redis and PostgreSQL
// strategies, with real processes where exclusion or a dead holder is the point.
#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include "support/lease_contenders.hpp"
#include "support/processes.hpp"
#include "support/servers.hpp"

#include <doctest/doctest.h>
#include <pqxx/pqxx>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <type_traits>

using namespace std::chrono_literals;
using avout::testing::scaled;
using avout::testing::wait_for_file;
using Clock = std::chrono::steady_clock;

namespace {

using Kind = avout::testing::LeaseStoreKind;
const auto& all_kinds = avout::testing::all_lease_stores;
const auto kind_name = avout::testing::lease_store_name;

using Contender = avout::testing::LeaseContender;

std::string random_suffix() {
  static std::mt19937_64 random{std::random_device{}()};
  return std::to_string(random() % 1000000000);
}

std::string unique_name(const std::string& stem) {
  return "/lease-test/" + stem + "-" + random_suffix();
}

// Starts the shared servers in the parent, before any fork, so children only connect.
void start_servers() {
  (void)avout::testing::shared_zookeeper();
  (void)avout::testing::shared_redis();
  (void)avout::testing::shared_postgres();
}

// A scratch directory shared by a test's processes, removed at the end.
struct ScratchDirectory {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("avout-lease-test-" + random_suffix());
  ScratchDirectory() { std::filesystem::create_directories(path); }
  ~ScratchDirectory() { std::filesystem::remove_all(path); }
};

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Written under a temporary name and renamed: a reader never sees half a file.
void write_text(const std::filesystem::path& file, const std::string& text) {
  const auto temporary = file.string() + ".tmp";
  std::ofstream(temporary) << text;
  std::filesystem::rename(temporary, file);
}

}  // namespace

TEST_CASE("six processes incrementing a plain file under a lease end at the exact total") {
  start_servers();
  for (Kind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    const std::string name = unique_name("exclusive");
    ScratchDirectory scratch;
    const auto counter = scratch.path / "counter";
    const auto tokens = scratch.path / "tokens";
    write_text(counter, "0");
    constexpr int processes = 6;
    constexpr int rounds = 30;
    const auto codes = avout::testing::run_in_processes(
        processes,
        [&](int) {
          Contender self(kind, name);
          for (int i = 0; i < rounds; ++i) {
            auto lease = self->lock("counter", {.duration = scaled(20s), .max_wait = scaled(60s)});
            // Read, pause, write: any overlap of two holders would lose an increment.
            const long value = std::stol(read_text(counter));
            std::this_thread::sleep_for(200us);
            write_text(counter, std::to_string(value + 1));
            std::ofstream(tokens, std::ios::app) << lease.token << "\n";
            if (!lease.running() || !self->unlock(lease)) {
              throw std::runtime_error("the lease ended inside the critical section");
            }
          }
        },
        scaled(120s));
    CHECK(codes == std::vector<int>(processes, 0));
    CHECK(std::stol(read_text(counter)) == processes * rounds);
    // Appended under the lease, so in the order of the holds: tokens must strictly increase.
    std::ifstream in(tokens);
    std::vector<std::uint64_t> seen;
    for (std::uint64_t token; in >> token;) seen.push_back(token);
    CHECK(seen.size() == static_cast<std::size_t>(processes * rounds));
    for (std::size_t i = 1; i < seen.size(); ++i) REQUIRE(seen[i] > seen[i - 1]);
  }
}

TEST_CASE("four threads sharing one lease lock exclude each other too") {
  start_servers();
  for (Kind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    Contender shared(kind, unique_name("threads"));
    // Loaded and stored separately: only the lease keeps increments from being lost (atomic
    // only so that a thread sanitizer, blind to the server's ordering, has nothing to say).
    std::atomic<long> plain{0};
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 25; ++i) {
          try {
            auto lease = shared->lock("k", {.duration = scaled(20s), .max_wait = scaled(30s)});
            const long value = plain.load(std::memory_order_relaxed);
            std::this_thread::sleep_for(100us);
            plain.store(value + 1, std::memory_order_relaxed);
            if (!shared->unlock(lease)) ++failures;
          } catch (const std::exception&) {
            ++failures;
          }
        }
      });
    }
    for (auto& thread : threads) thread.join();
    CHECK(failures == 0);
    CHECK(plain == 100);
  }
}

TEST_CASE("unlock frees a key at once and a second unlock of the same lease frees nothing") {
  start_servers();
  for (Kind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    const std::string name = unique_name("release");
    Contender first(kind, name);
    Contender second(kind, name);
    const auto a = first->lock("job-1", {.duration = scaled(30s)});
    CHECK(a.token > 0);
    CHECK(a.running());
    CHECK_FALSE(second->try_lock("job-1", 1s));
    const auto other_key = second->try_lock("job-2", 1s);  // keys are independent
    REQUIRE(other_key);
    CHECK(second->unlock(*other_key));
    CHECK(first->unlock(a));
    CHECK_FALSE(first->unlock(a));
    const auto b = second->try_lock("job-1", scaled(30s));
    REQUIRE(b);
    CHECK(b->token > a.token);
    CHECK_FALSE(first->unlock(a));  // a stale token cannot release the new holder
    CHECK_FALSE(first->try_lock("job-1", 1s));
    CHECK(second->unlock(*b));
  }
}

namespace {
// Takes and releases `key` three times, checking the tokens grow; returns the last one.
std::uint64_t hold_and_release_three_times(avout::LeaseLock& leases, const std::string& key) {
  std::uint64_t highest = 0;
  for (int i = 0; i < 3; ++i) {
    const auto lease = leases.lock(key, {.duration = scaled(30s)});
    CHECK(lease.token > highest);
    highest = lease.token;
    CHECK(leases.unlock(lease));
  }
  return highest;
}
}  // namespace

TEST_CASE("tokens keep increasing when Redis restarts without its data") {
  // A Redis without persistence (or a failover to a replica that missed the last writes)
  // forgets the key's token counter; the tokens it hands out next must still be higher.
  avout::testing::RedisServer redis{false};
  avout::redis::Store store{redis.url()};
  auto leases = avout::redis::lease_lock(store, unique_name("restart"));
  const std::uint64_t highest = hold_and_release_three_times(leases, "job");
  redis.stop();
  redis.start();
  // The pooled connection learns of the restart on its next command: a BackendError (the
  // store's documented error) once, then a new connection.
  std::optional<avout::Lease> after;
  for (int attempt = 0; attempt < 3 && !after; ++attempt) {
    try {
      after = leases.lock("job", {.duration = scaled(30s)});
    } catch (const avout::BackendError&) {
    }
  }
  REQUIRE(after);
  CHECK(after->token > highest);
}

TEST_CASE("tokens keep increasing when PostgreSQL loses a key's row") {
  // A restore from backup or a failover to a lagging replica can lose the last writes to the
  // leases table; the tokens handed out next must still be higher.
  start_servers();
  avout::postgres::Store store{avout::testing::shared_postgres().url()};
  const std::string name = unique_name("lost-row");
  auto leases = avout::postgres::lease_lock(store, name);
  const std::uint64_t highest = hold_and_release_three_times(leases, "job");
  {
    pqxx::connection admin(avout::testing::shared_postgres().url());
    pqxx::work work(admin);
    work.exec_params(
        "DELETE FROM " + avout::postgres::StoreOptions{}.table_prefix + "leases WHERE name = $1",
        name);
    work.commit();
  }
  const auto after = leases.lock("job", {.duration = scaled(30s)});
  CHECK(after.token > highest);
}

TEST_CASE("an expired lease is taken by another; the old lease's unlock and renew free nothing") {
  start_servers();
  for (Kind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    const std::string name = unique_name("expiry");
    Contender old_holder(kind, name);
    Contender new_holder(kind, name);
    Contender bystander(kind, name);
    // Long enough that the old lease is surely still running at the first try_lock below,
    // however slowly the machine answers (300 ms ran out there under a loaded ctest).
    const auto duration = scaled(2s);
    const auto before = Clock::now();
    auto old_lease = old_holder->lock("k", {.duration = duration});
    CHECK_FALSE(new_holder->try_lock("k", 1s));
    const auto taken = new_holder->lock("k", {.duration = scaled(30s), .max_wait = scaled(10s)});
    CHECK(Clock::now() - before >= duration);  // not before the old lease ran out
    CHECK(taken.token > old_lease.token);
    CHECK_FALSE(old_lease.running());
    CHECK_FALSE(old_holder->unlock(old_lease));
    CHECK_FALSE(old_holder->renew(old_lease, scaled(30s)));
    CHECK_FALSE(bystander->try_lock("k", 1s));  // the stale calls left the new hold alone
    CHECK(new_holder->unlock(taken));
    const auto next = bystander->try_lock("k", 1s);
    REQUIRE(next);
    CHECK(next->token > taken.token);
    CHECK(bystander->unlock(*next));
  }
}

TEST_CASE("renew keeps a lease beyond its first duration, and it ends once renewing stops") {
  start_servers();
  for (Kind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    const std::string name = unique_name("renew");
    Contender holder(kind, name);
    Contender other(kind, name);
    const auto duration = scaled(1s);  // renewed every quarter: a slow renewal has 750 ms
    auto lease = holder->lock("k", {.duration = duration});
    const auto first_expiry = lease.expires;
    const auto started = Clock::now();
    while (Clock::now() - started < 3 * duration) {
      std::this_thread::sleep_for(duration / 4);
      const auto previous = lease.expires;
      REQUIRE(holder->renew(lease, duration));
      CHECK(lease.expires > previous);
      CHECK_FALSE(other->try_lock("k", 1s));
    }
    CHECK(lease.expires > first_expiry + 2 * duration);
    const auto taken = other->lock("k", {.duration = scaled(30s), .max_wait = scaled(10s)});
    CHECK(taken.token > lease.token);
    CHECK_FALSE(holder->renew(lease, duration));
    CHECK(other->unlock(taken));
  }
}

TEST_CASE("waiting longer than max_wait throws Timeout") {
  start_servers();
  for (Kind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    const std::string name = unique_name("timeout");
    Contender holder(kind, name);
    Contender waiter(kind, name);
    const auto lease = holder->lock("busy", {.duration = scaled(30s)});
    const auto before = Clock::now();
    CHECK_THROWS_AS(waiter->lock("busy", {.duration = 1s, .max_wait = 300ms}), avout::Timeout);
    const auto waited = Clock::now() - before;
    CHECK(waited >= 300ms);
    CHECK(waited < 300ms + scaled(3s));
    CHECK_THROWS_AS(waiter->lock("busy", {.duration = 1s, .max_wait = 0ms}), avout::Timeout);
    CHECK(holder->unlock(lease));
    CHECK(waiter->unlock(waiter->lock("busy", {.duration = 1s, .max_wait = 0ms})));
  }
}

TEST_CASE("bad keys, names and durations are typed errors and change nothing") {
  static_assert(std::is_base_of_v<avout::Error, avout::InvalidDuration>);
  start_servers();
  for (Kind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    const std::string name = unique_name("invalid");
    Contender self(kind, name);
    for (const std::string& bad :
         {std::string(), std::string("a/b"), std::string("with space"), std::string("tab\t"),
          std::string("."), std::string(".."), std::string(257, 'k'), std::string("caf\xc3\xa9")}) {
      CAPTURE(bad);
      CHECK_THROWS_AS(self->lock(bad), avout::InvalidName);
      CHECK_THROWS_AS(self->try_lock(bad, 1s), avout::InvalidName);
    }
    const std::string longest(256, 'k');
    CHECK(self->unlock(self->lock(longest)));
    CHECK_THROWS_AS(self->lock("k", {.duration = 0ms}), avout::InvalidDuration);
    CHECK_THROWS_AS(self->lock("k", {.duration = -5ms}), avout::InvalidDuration);
    CHECK_THROWS_AS(self->lock("k", {.max_wait = -1ms}), avout::InvalidDuration);
    CHECK_THROWS_AS(self->try_lock("k", 0ms), avout::InvalidDuration);
    CHECK_THROWS_AS(self->lock("k", {.duration = std::chrono::hours(24 * 400)}),
                    avout::InvalidDuration);
    auto lease = self->lock("k", {.duration = scaled(30s)});
    const auto expires = lease.expires;
    try {
      self->renew(lease, 0ms);
      FAIL("renew with a zero duration must throw");
    } catch (const avout::InvalidDuration& error) {
      CHECK(std::string(error.what()).find("must be positive") != std::string::npos);
    }
    CHECK(lease.expires == expires);
    CHECK_FALSE(self->try_lock("k", 1s));  // the refused renew left the lease held
    CHECK(self->unlock(lease));
  }
  avout::Client client(avout::testing::shared_zookeeper().connect_string());
  for (const char* bad : {"", "relative", "/a/../b", "/trailing/"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(client.lease_lock(bad), avout::InvalidName);
  }
  avout::redis::Store redis(avout::testing::shared_redis().url());
  avout::postgres::Store postgres(avout::testing::shared_postgres().url());
  for (const std::string& bad : {std::string(), std::string("new\nline"), std::string(1025, 'n')}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(avout::redis::lease_lock(redis, bad), avout::InvalidName);
    CHECK_THROWS_AS(avout::postgres::lease_lock(postgres, bad), avout::InvalidName);
  }
}

TEST_CASE("a SIGKILLed holder's lease frees after its duration, not before") {
  start_servers();
  for (Kind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    const std::string name = unique_name("killed");
    ScratchDirectory scratch;
    const auto token_file = scratch.path / "token";
    const auto duration = scaled(2s);
    const auto before = Clock::now();  // the child's lease starts after this
    avout::testing::ChildProcess child(0, [&](int) {
      Contender self(kind, name);
      const auto lease = self->lock("k", {.duration = duration});
      write_text(token_file, std::to_string(lease.token));
      std::this_thread::sleep_for(1h);  // killed long before
    });
    REQUIRE(wait_for_file(token_file, scaled(30s)));
    const std::uint64_t dead_token = std::stoull(read_text(token_file));
    child.signal(SIGKILL);
    CHECK(child.wait(scaled(10s)) == 128 + SIGKILL);
    const auto killed = Clock::now();
    Contender survivor(kind, name);
    const bool surely_held = Clock::now() < before + duration;
    const auto early = survivor->try_lock("k", 1s);
    if (surely_held) CHECK_FALSE(early);
    const auto lease =
        early ? *early : survivor->lock("k", {.duration = 1s, .max_wait = scaled(20s)});
    const auto acquired = Clock::now();
    CHECK(lease.token > dead_token);
    CHECK(acquired - before >= duration);
    // ZooKeeper: a full duration plus its margin after the survivor first saw it.
    CHECK(acquired - killed < duration + duration / 5 + scaled(2s));
    CHECK(survivor->unlock(lease));
  }
}

TEST_CASE("four processes racing for an expired lease: exactly one takes it") {
  start_servers();
  for (Kind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    const std::string name = unique_name("race");
    ScratchDirectory scratch;
    avout::testing::StartSignal go;
    std::vector<avout::testing::ChildProcess> children;
    for (int index = 0; index < 4; ++index) {
      children.emplace_back(index, [&](int me) {
        go.wait();
        Contender self(kind, name);
        try {
          const auto lease = self->lock("k", {.duration = scaled(60s), .max_wait = scaled(2500ms)});
          write_text(scratch.path / ("won-" + std::to_string(me)), std::to_string(lease.token));
        } catch (const avout::Timeout&) {
          // Lost the race: the winner holds the key for the rest of the test.
        }
      });
    }
    Contender parent(kind, name);
    const auto first = parent->lock("k", {.duration = scaled(500ms)});
    go.release();
    std::vector<int> codes;
    for (auto& child : children) codes.push_back(child.wait(scaled(60s)));
    CHECK(codes == std::vector<int>(4, 0));
    std::vector<std::uint64_t> winners;
    for (const auto& entry : std::filesystem::directory_iterator(scratch.path)) {
      winners.push_back(std::stoull(read_text(entry.path())));
    }
    REQUIRE(winners.size() == 1);
    CHECK(winners.front() > first.token);
    CHECK_FALSE(parent->unlock(first));
    CHECK_FALSE(parent->try_lock("k", 1s));
  }
}
