// Refs and dosync against real servers: snapshot isolation, write skew and ensure, commute,
// validators, and refs in ZooKeeper, Redis and PostgreSQL committing together.
#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>
#include <tuple>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/stm-test", stem);
}

void start_servers() { avout::testing::start_shared_servers(); }

using Stores = avout::testing::ThreeStores;

long total(avout::Client& client, std::vector<avout::Ref<long>>& accounts) {
  return client.dosync([&] {
    long sum = 0;
    for (auto& account : accounts) sum += account.deref();
    return sum;
  });
}

}  // namespace

TEST_CASE("transactional calls outside dosync throw NoTransaction; deref reads the newest value") {
  start_servers();
  Stores stores;
  auto ref = stores.client.ref<long>(unique_name("outside"), 7);
  CHECK(ref.deref() == 7);
  CHECK_THROWS_AS(ref.alter([](long v) { return v + 1; }), avout::NoTransaction);
  CHECK_THROWS_AS(ref.commute([](long v) { return v + 1; }), avout::NoTransaction);
  CHECK_THROWS_AS(ref.ensure(), avout::NoTransaction);
  CHECK_THROWS_AS(ref.ref_set(1), avout::NoTransaction);
  CHECK(stores.client.dosync([&] { return ref.alter([](long v, long d) { return v + d; }, 3); }) ==
        10);
  CHECK(*ref == 10);
}

TEST_CASE(
    "deref_all gives the values of refs in several stores from one snapshot, in and outside "
    "dosync") {
  start_servers();
  Stores stores;
  auto in_zookeeper = stores.client.ref<long>(unique_name("all-zk"), 1);
  auto in_redis = stores.client.ref<std::string>(unique_name("all-redis"), "one", stores.redis);
  auto in_postgres = stores.client.ref<double>(unique_name("all-pg"), 1.5, stores.postgres);
  CHECK(avout::deref_all(in_zookeeper, in_redis, in_postgres) ==
        std::tuple<long, std::string, double>{1, "one", 1.5});
  const auto inside = stores.client.dosync([&] {
    in_redis.ref_set("two");  // its own write is what the transaction reads
    return avout::deref_all(in_zookeeper, in_redis, in_postgres, in_zookeeper);
  });
  CHECK(inside == std::tuple<long, std::string, double, long>{1, "two", 1.5, 1});
  CHECK(std::get<0>(avout::deref_all(in_redis)) == "two");

  // Refs of another client: refused, in and outside dosync.
  Stores others;
  auto elsewhere = others.client.ref<long>(unique_name("all-other"), 0);
  CHECK_THROWS_AS(avout::deref_all(in_zookeeper, elsewhere), avout::Error);
  CHECK_THROWS_AS(stores.client.dosync([&] { return avout::deref_all(in_zookeeper, elsewhere); }),
                  avout::Error);
}

TEST_CASE("a ref's initial value is used only when the ref is new") {
  start_servers();
  Stores stores;
  const std::string name = unique_name("initial");
  auto first = stores.client.ref<std::string>(name, "first", stores.redis);
  auto second = stores.client.ref<std::string>(name, "second", stores.redis);
  CHECK(second.deref() == "first");
}

TEST_CASE("one transaction over ZooKeeper, Redis and PostgreSQL refs commits all or nothing") {
  start_servers();
  Stores stores;
  const std::string prefix = unique_name("mixed");
  auto accounts = stores.accounts(prefix, 3, 100);
  stores.client.dosync([&] {
    accounts[0].alter([](long v) { return v - 30; });
    accounts[1].alter([](long v) { return v + 20; });
    accounts[2].commute([](long v) { return v + 10; });
  });
  CHECK(accounts[0].deref() == 70);
  CHECK(accounts[1].deref() == 120);
  CHECK(accounts[2].deref() == 110);

  // A body that throws after writing leaves every ref as it was.
  CHECK_THROWS_AS(stores.client.dosync([&] {
    accounts[0].ref_set(0);
    accounts[1].ref_set(0);
    throw std::runtime_error("user error");
  }),
                  std::runtime_error);
  CHECK(total(stores.client, accounts) == 300);

  // So does a validator that rejects one of the values.
  accounts[2].set_validator([](const long& v) { return v >= 0; });
  CHECK_THROWS_AS(stores.client.dosync([&] {
    accounts[0].alter([](long v) { return v + 1000; });
    accounts[2].alter([](long v) { return v - 1000; });
  }),
                  avout::ValidationError);
  CHECK(accounts[0].deref() == 70);
  CHECK(accounts[2].deref() == 110);
}

TEST_CASE("nested dosync joins the outer transaction") {
  start_servers();
  Stores stores;
  auto a = stores.client.ref<long>(unique_name("nested-a"), 1);
  auto b = stores.client.ref<long>(unique_name("nested-b"), 1);
  CHECK_THROWS_AS(stores.client.dosync([&] {
    a.ref_set(5);
    stores.client.dosync([&] { b.ref_set(5); });
    throw std::runtime_error("abort both");
  }),
                  std::runtime_error);
  CHECK(a.deref() == 1);
  CHECK(b.deref() == 1);
}

TEST_CASE("a SessionExpired the body throws passes through unchanged, the body run once") {
  // Only this client's own session ending retries an attempt; the body's own exception (or
  // one from another client whose session ended) aborts the transaction like any other.
  start_servers();
  Stores stores;
  auto a = stores.client.ref<long>(unique_name("thrown-expiry"), 1);
  int runs = 0;
  try {
    stores.client.dosync(avout::Deadline::after(scaled(10s)), [&] {
      ++runs;
      a.ref_set(5);
      throw avout::SessionExpired("thrown by the body");
    });
    FAIL("dosync returned");
  } catch (const avout::SessionExpired& error) {
    CHECK(std::string(error.what()) == "thrown by the body");
  }
  CHECK(runs == 1);
  CHECK(a.deref() == 1);
}

TEST_CASE("every read in a transaction sees one snapshot while another process commits") {
  start_servers();
  const std::string prefix = unique_name("snapshot");
  {
    Stores setup;
    (void)setup.accounts(prefix, 2, 500);
  }
  const auto codes = avout::testing::run_in_processes(
      2,
      [&](int index) {
        Stores stores;
        auto accounts = stores.accounts(prefix, 2, 500);
        for (int i = 0; i < 60; ++i) {
          if (index == 0) {
            stores.client.dosync([&] {
              accounts[0].alter([](long v) { return v - 1; });
              accounts[1].alter([](long v) { return v + 1; });
            });
          } else {
            const long seen = stores.client.dosync([&] {
              const long first = accounts[0].deref();
              std::this_thread::sleep_for(2ms);  // let the writer commit in between
              return first + accounts[1].deref();
            });
            if (seen != 1000) throw std::runtime_error("fractured read: " + std::to_string(seen));
          }
        }
      },
      scaled(120s));
  CHECK(codes == std::vector<int>{0, 0});
}

TEST_CASE(
    "bank transfers between 20 accounts in three stores from 8 processes conserve the total") {
  start_servers();
  const std::string prefix = unique_name("bank");
  constexpr int accounts_count = 20;
  constexpr long initial = 1000;
  {
    Stores setup;
    (void)setup.accounts(prefix, accounts_count, initial);
  }
  const auto codes = avout::testing::run_in_processes(
      8,
      [&](int index) {
        Stores stores;
        auto accounts = stores.accounts(prefix, accounts_count, initial);
        std::mt19937 random(static_cast<unsigned>(index) * 7919u + 1);
        for (int i = 0; i < 250; ++i) {
          if (index == 7 && i % 5 == 0) {  // concurrent read-only audits
            if (total(stores.client, accounts) != accounts_count * initial) {
              throw std::runtime_error("an audit saw a changed total");
            }
          }
          const int from = static_cast<int>(random() % accounts_count);
          const int to =
              static_cast<int>((from + 1 + random() % (accounts_count - 1)) % accounts_count);
          const long amount = static_cast<long>(random() % 50);
          stores.client.dosync([&] {
            accounts[from].alter([](long v, long d) { return v - d; }, amount);
            accounts[to].alter([](long v, long d) { return v + d; }, amount);
          });
        }
      },
      scaled(600s));
  CHECK(codes == std::vector<int>(8, 0));
  Stores stores;
  auto accounts = stores.accounts(prefix, accounts_count, initial);
  CHECK(total(stores.client, accounts) == accounts_count * initial);
}

TEST_CASE("a commute-only counter from 8 processes is exact and never retries on that ref") {
  start_servers();
  const std::string name = unique_name("commuted");
  {
    Stores setup;
    (void)setup.client.ref<long>(name, 0, setup.redis);
  }
  const auto codes = avout::testing::run_in_processes(
      8,
      [&](int) {
        Stores stores;
        auto counter = stores.client.ref<long>(name, 0, stores.redis);
        int body_runs = 0;
        for (int i = 0; i < 50; ++i) {
          stores.client.dosync([&] {
            ++body_runs;
            counter.commute([](long v) { return v + 1; });
          });
        }
        // Commutes retry only their multi; the body never reruns for them.
        if (body_runs != 50) throw std::runtime_error("body reran " + std::to_string(body_runs));
      },
      scaled(300s));
  CHECK(codes == std::vector<int>(8, 0));
  Stores stores;
  CHECK(stores.client.ref<long>(name, 0, stores.redis).deref() == 400);
}

namespace {
// Two doctors on call: each transaction lets one go off call if the other is on call. In
// snapshot isolation without ensure both can go (write skew); with ensure, or in the default
// serializable isolation (which checks the other doctor's head it read), at least one stays.
bool write_skew_happened(bool use_ensure, avout::Isolation isolation) {
  const std::string prefix = unique_name(use_ensure ? "skew-ensure" : "skew");
  {
    Stores setup;
    (void)setup.accounts(prefix, 2, 1);
  }
  for (int round = 0; round < 20; ++round) {
    {
      Stores setup;
      auto doctors = setup.accounts(prefix, 2, 1);
      setup.client.dosync([&] {
        doctors[0].ref_set(1);
        doctors[1].ref_set(1);
      });
    }
    const auto codes = avout::testing::run_in_processes(
        2,
        [&](int index) {
          Stores stores;
          auto doctors = stores.accounts(prefix, 2, 1);
          stores.client.dosync(isolation, [&] {
            auto& other = doctors[1 - index];
            const long other_on_call = use_ensure ? other.ensure() : other.deref();
            std::this_thread::sleep_for(30ms);  // both decide before either commits
            if (other_on_call == 1) doctors[index].ref_set(0);
          });
        },
        scaled(60s));
    REQUIRE(codes == std::vector<int>{0, 0});
    Stores check;
    auto doctors = check.accounts(prefix, 2, 1);
    if (doctors[0].deref() + doctors[1].deref() == 0) return true;
  }
  return false;
}
}  // namespace

TEST_CASE(
    "write skew happens in snapshot isolation without ensure, never with it, never when "
    "serializable") {
  start_servers();
  CHECK(write_skew_happened(false, avout::Isolation::snapshot));
  CHECK_FALSE(write_skew_happened(true, avout::Isolation::snapshot));
  CHECK_FALSE(write_skew_happened(false, avout::Isolation::serializable));
}

TEST_CASE("a ref's watch fires in another process after a commit") {
  start_servers();
  const std::string name = unique_name("watched");
  {
    Stores setup;
    (void)setup.client.ref<long>(name, 0, setup.postgres);
  }
  avout::testing::StartSignal go;
  avout::testing::ChildProcess child(0, [&](int) {
    go.wait();
    Stores other;
    auto same = other.client.ref<long>(name, 0, other.postgres);
    other.client.dosync([&] { same.ref_set(42); });
  });
  Stores stores;
  auto ref = stores.client.ref<long>(name, 0, stores.postgres);
  std::mutex mutex;
  std::condition_variable seen_cv;
  long seen = 0;
  ref.add_watch("w", [&](const long&, const long& value) {
    std::lock_guard lock(mutex);
    seen = value;
    seen_cv.notify_all();
  });
  go.release();
  const std::vector<int> codes{child.wait(scaled(60s))};
  REQUIRE(codes == std::vector<int>{0});
  std::unique_lock lock(mutex);
  CHECK(seen_cv.wait_for(lock, scaled(10s), [&] { return seen == 42; }));
  lock.unlock();
  ref.remove_watch("w");
}
