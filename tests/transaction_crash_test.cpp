// Transactions and crashes: clients killed with SIGKILL in the middle of commits leave no
// partial transaction visible, and Client::gc sweeps the values they left behind.
#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <signal.h>

#include <atomic>
#include <random>
#include <set>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/crash-test", stem);
}

void start_servers() { avout::testing::start_shared_servers(); }

// A client whose session dies soon after its process does, with one store of each kind.
struct Stores : avout::testing::ThreeStores {
  Stores() : ThreeStores(std::chrono::milliseconds(2000)) {}

  // Stored points of `name` that its head does not reference.
  std::size_t unreferenced_points(const std::string& name, avout::Store& in) {
    const auto head = avout::inspect::ref_head(client, name).value();
    std::set<std::string> referenced{head.newest.id};
    for (const auto& older : head.history) referenced.insert(older.point.id);
    std::size_t count = 0;
    for (const auto& point : in.reference_data(client.ref_value_key(name))->points()) {
      if (!referenced.contains(point.id)) ++count;
    }
    return count;
  }
};

long total(avout::Client& client, std::vector<avout::Ref<long>>& accounts) {
  return client.dosync([&] {
    long sum = 0;
    for (auto& account : accounts) sum += account.deref();
    return sum;
  });
}

// Polls gc until it erased at least `expected` points (the dead sessions expire meanwhile).
std::size_t collect_until(Stores& stores, std::size_t expected) {
  std::size_t erased = 0;
  const auto deadline = std::chrono::steady_clock::now() + scaled(30s);
  while (erased < expected && std::chrono::steady_clock::now() < deadline) {
    erased += stores.client.gc({stores.redis, stores.postgres}).points_erased;
    if (erased < expected) std::this_thread::sleep_for(200ms);
  }
  return erased;
}

}  // namespace

TEST_CASE("gc erases the value a process wrote before it died between store write and commit") {
  start_servers();
  const std::string prefix = unique_name("orphan");
  {
    Stores setup;
    (void)setup.accounts(prefix, 3, 10);
  }
  // Both refs live outside ZooKeeper (index 1: Redis, index 2: PostgreSQL), so their values
  // are written before the multi. The written ref's value is stored first; then the commuted
  // ref is recomputed, and its validator kills the process: one value stored, none committed.
  avout::testing::ChildProcess child(0, [&](int) {
    Stores stores;
    auto accounts = stores.accounts(prefix, 3, 10);
    std::atomic<bool> armed{false};  // set_validator checks the current value at once
    accounts[2].set_validator([&](const long&) {
      if (armed) raise(SIGKILL);
      return true;
    });
    armed = true;
    stores.client.dosync([&] {
      accounts[1].ref_set(111);
      accounts[2].commute([](long v) { return v + 212; });
    });
  });
  CHECK(child.wait(scaled(60s)) == 128 + SIGKILL);

  Stores stores;
  auto accounts = stores.accounts(prefix, 3, 10);
  CHECK(accounts[1].deref() == 10);
  CHECK(accounts[2].deref() == 10);
  const std::size_t orphans =
      stores.unreferenced_points(Stores::account_name(prefix, 1), stores.redis) +
      stores.unreferenced_points(Stores::account_name(prefix, 2), stores.postgres);
  CHECK(orphans == 1);
  CHECK(collect_until(stores, 1) >= 1);
  CHECK(stores.unreferenced_points(Stores::account_name(prefix, 1), stores.redis) == 0);
  CHECK(stores.unreferenced_points(Stores::account_name(prefix, 2), stores.postgres) == 0);
  // Committed values are untouched by gc.
  CHECK(accounts[1].deref() == 10);
  CHECK(accounts[2].deref() == 10);
  stores.client.dosync([&] { accounts[1].alter([](long v) { return v + 1; }); });
  CHECK(accounts[1].deref() == 11);
}

TEST_CASE("clients SIGKILLed in the middle of commits leave no partial transaction visible") {
  start_servers();
  const std::string prefix = unique_name("killed");
  constexpr int accounts_count = 9;
  constexpr long initial = 1000;
  constexpr int workers_count = 4;
  constexpr int kills = 12;
  {
    Stores setup;
    (void)setup.accounts(prefix, accounts_count, initial);
  }

  auto transfer_forever = [&](int index) {
    Stores stores;
    auto accounts = stores.accounts(prefix, accounts_count, initial);
    std::mt19937 random(static_cast<unsigned>(index) * 104729u + 7);
    const auto stop = std::chrono::steady_clock::now() + scaled(120s);
    while (std::chrono::steady_clock::now() < stop) {
      const int from = static_cast<int>(random() % accounts_count);
      const int to =
          static_cast<int>((from + 1 + random() % (accounts_count - 1)) % accounts_count);
      const long amount = static_cast<long>(random() % 20);
      stores.client.dosync([&] {
        accounts[from].alter([](long v, long d) { return v - d; }, amount);
        accounts[to].commute([](long v, long d) { return v + d; }, amount);
      });
    }
  };
  // The auditor checks every snapshot while workers die around it.
  avout::testing::ChildProcess auditor(100, [&](int) {
    Stores stores;
    auto accounts = stores.accounts(prefix, accounts_count, initial);
    const auto stop = std::chrono::steady_clock::now() + scaled(8s);
    int audits = 0;
    while (std::chrono::steady_clock::now() < stop || audits < 20) {
      const long seen = total(stores.client, accounts);
      if (seen != accounts_count * initial) {
        throw std::runtime_error("an audit saw the total " + std::to_string(seen));
      }
      ++audits;
    }
  });
  std::vector<std::unique_ptr<avout::testing::ChildProcess>> workers;
  for (int i = 0; i < workers_count; ++i) {
    workers.push_back(std::make_unique<avout::testing::ChildProcess>(i, transfer_forever));
  }

  std::mt19937 random(12345);
  for (int kill = 0; kill < kills; ++kill) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + random() % 350));
    const std::size_t victim = random() % workers.size();
    workers[victim]->signal(SIGKILL);
    CHECK(workers[victim]->wait(scaled(10s)) == 128 + SIGKILL);
    workers[victim] =
        std::make_unique<avout::testing::ChildProcess>(workers_count + kill, transfer_forever);
  }
  CHECK(auditor.wait(scaled(120s)) == 0);
  for (auto& worker : workers) worker->signal(SIGKILL);
  workers.clear();

  Stores stores;
  auto accounts = stores.accounts(prefix, accounts_count, initial);
  CHECK(total(stores.client, accounts) == accounts_count * initial);
  const auto [commits, retries] = stores.client.transaction_counts();
  CHECK(commits == 0);  // this client committed nothing: the checks above only read
  (void)retries;

  // Whatever the dead left behind, gc sweeps once their sessions have expired.
  auto garbage = [&] {
    std::size_t count = 0;
    for (int i = 0; i < accounts_count; ++i) {
      count += stores.unreferenced_points(Stores::account_name(prefix, i), stores.store(i));
    }
    return count;
  };
  const auto deadline = std::chrono::steady_clock::now() + scaled(30s);
  while (garbage() > 0 && std::chrono::steady_clock::now() < deadline) {
    (void)stores.client.gc({stores.redis, stores.postgres});
    std::this_thread::sleep_for(200ms);
  }
  CHECK(garbage() == 0);
  CHECK(total(stores.client, accounts) == accounts_count * initial);
}
