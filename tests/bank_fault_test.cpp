// The fault suite: the bank workload (refs in ZooKeeper, Redis and PostgreSQL; 8 client
// processes; a counter atom) while clients are SIGKILLed and restarted, the ZooKeeper
// ensemble leader is killed, a client is frozen past its session timeout, and Redis and
// PostgreSQL restart. Every process writes its history (tests/support/history.hpp); the
// checker verifies that the total is conserved in every snapshot, that every acknowledged
// transfer is present and replays to the final balances, that the counter is linearizable,
// and that a counter kept under a Lock lost nothing and no dead process keeps the lock.
#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include "support/history.hpp"
#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

constexpr int accounts_count = 12;
constexpr long initial = 1000;
constexpr int clients = 8;
constexpr int most_clients = 16;  // the first 8 and those started in place of killed ones

struct Cluster {
  avout::testing::ZooKeeperEnsemble zookeeper;
  avout::testing::RedisServer redis{true};  // appendonly, fsync always: survives restarts
  avout::testing::PostgresServer postgres;
};

Cluster& cluster() {
  static Cluster servers;
  return servers;
}

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/fault-test", stem);
}

// One process's view: a client on the ensemble and one store of each kind.
struct Bank {
  avout::Client client;
  avout::redis::Store redis;
  avout::postgres::Store postgres;
  std::vector<avout::Ref<long>> accounts;
  avout::Atom<long> counter;

  explicit Bank(const std::string& prefix)
      : client(avout::ClientOptions{.hosts = cluster().zookeeper.connect_string(),
                                    .session_timeout = 4000ms,
                                    .connect_timeout = 30000ms}),
        redis(cluster().redis.url()),
        postgres(cluster().postgres.url()),
        counter(client.atom<long>(prefix + "/counter", 0, redis)) {
    for (int i = 0; i < accounts_count; ++i) {
      avout::Store& store = i % 3 == 0   ? client.default_store()
                            : i % 3 == 1 ? static_cast<avout::Store&>(redis)
                                         : static_cast<avout::Store&>(postgres);
      accounts.push_back(
          client.ref<long>(prefix + "/account-" + std::to_string(i), initial, store));
    }
  }
  avout::Ref<std::vector<long>> ledger(const std::string& prefix, int index) {
    return client.ref<std::vector<long>>(prefix + "/ledger-" + std::to_string(index), {});
  }
};

// Runs `step` until no avout::Error stops it, for up to `within`: setting up talks to the
// servers too, and a fault or a loaded machine (a server silent past the receive timeout)
// may fail it with ConnectionLoss, which says to try again. The last error is rethrown.
template <typename Step>
void until_done(std::chrono::milliseconds within, Step&& step) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  for (;;) {
    try {
      step();
      return;
    } catch (const avout::Error&) {
      if (std::chrono::steady_clock::now() >= deadline) throw;
      std::this_thread::sleep_for(200ms);
    }
  }
}

// The body of one client process: transfers, audits and increments until `stop` exists.
void run_client(const std::string& prefix, const std::filesystem::path& directory, int index) {
  avout::testing::HistoryWriter history((directory / std::to_string(index)).string(), index);
  // A fault may hit the setup (a frozen process finds its session expired when it wakes), so
  // all of it is retried, not only the first step.
  std::unique_ptr<Bank> bank;
  std::vector<avout::Ref<std::vector<long>>> ledgers;  // every client's, for the audits
  std::optional<avout::Lock> lock_handle;
  until_done(scaled(120s), [&] {
    lock_handle.reset();
    ledgers.clear();  // made by the client a failed try opened: gone before it goes
    bank.reset();
    bank = std::make_unique<Bank>(prefix);
    for (int other = 0; other < most_clients; ++other) {
      ledgers.push_back(bank->ledger(prefix, other));
    }
    lock_handle.emplace(bank->client.lock(prefix + "/lock"));
  });
  auto& ledger = ledgers.at(static_cast<std::size_t>(index));
  // A plain ZooKeeper counter changed only under the lock: a lost exclusion loses increments.
  auto& lock = *lock_handle;
  const std::string plain_counter = bank->client.options().root + "/fault-counters" + prefix;
  std::mt19937 random(static_cast<unsigned>(index) * 7919u + 3);
  std::int64_t next_id = std::int64_t{index} * 1000000;
  auto attempt = [&](const std::string& f, const nlohmann::json& argument, auto&& call) {
    const auto id = next_id++;
    history.record("invoke", f, id, argument);
    try {
      history.record("ok", f, id, call(id));
    } catch (const avout::Error& error) {
      // Lost connections, expired sessions, stores down: the outcome may be either.
      history.record("info", f, id, error.what());
      std::this_thread::sleep_for(50ms);
    }
  };
  for (int round = 0; !std::filesystem::exists(directory / "stop"); ++round) {
    const auto from = random() % accounts_count;
    const auto to = (from + 1 + random() % (accounts_count - 1)) % accounts_count;
    const long amount = static_cast<long>(random() % 30);
    attempt("transfer", {{"from", from}, {"to", to}, {"amount", amount}}, [&](std::int64_t id) {
      bank->client.dosync([&] {
        bank->accounts[from].alter([](long v, long d) { return v - d; }, amount);
        bank->accounts[to].alter([](long v, long d) { return v + d; }, amount);
        // The ledger records the transfer itself: (id, from, to, amount).
        ledger.alter(
            [](std::vector<long> entries, long done, long source, long target, long sum) {
              entries.insert(entries.end(), {done, source, target, sum});
              return entries;
            },
            static_cast<long>(id), static_cast<long>(from), static_cast<long>(to), amount);
      });
      return nlohmann::json(nullptr);
    });
    if (round % 4 == 0) {
      attempt("audit", nullptr, [&](std::int64_t) {
        // One snapshot of the balances and of every ledger: replaying exactly the transfers
        // the snapshot holds must give its balances (it shows a prefix of the commits).
        return nlohmann::json(bank->client.dosync([&] {
          std::vector<long> replayed(accounts_count, initial);
          for (auto& other : ledgers) {
            const auto entries = other.deref();
            for (std::size_t at = 0; at + 3 < entries.size(); at += 4) {
              replayed.at(static_cast<std::size_t>(entries[at + 1])) -= entries[at + 3];
              replayed.at(static_cast<std::size_t>(entries[at + 2])) += entries[at + 3];
            }
          }
          long sum = 0;
          for (int i = 0; i < accounts_count; ++i) {
            const long balance = bank->accounts[static_cast<std::size_t>(i)].deref();
            if (balance != replayed[static_cast<std::size_t>(i)]) {
              throw std::runtime_error("a snapshot's balances differ from its own ledgers");
            }
            sum += balance;
          }
          return sum;
        }));
      });
    }
    attempt("increment", nullptr, [&](std::int64_t) {
      return nlohmann::json(bank->counter.swap([](long v) { return v + 1; }));
    });
    if (round % 3 != 0) continue;
    // A holder killed with SIGKILL keeps the lock until its session ends: wait only briefly
    // so transfers keep flowing (a skipped increment is recorded as not done).
    const auto id = next_id++;
    history.record("invoke", "locked_increment", id);
    try {
      std::unique_lock held(lock, std::defer_lock);
      if (!held.try_lock_for(std::chrono::milliseconds(500))) {
        history.record("fail", "locked_increment", id);
        continue;
      }
      auto& session = bank->client.session();
      const auto bytes = session.get(plain_counter).data;
      const long next = std::stol(std::string(bytes.begin(), bytes.end())) + 1;
      lock.ensure_held();  // a hold lost to an expired session must not write
      session.set(plain_counter, avout::to_bytes(std::to_string(next)), -1);
      history.record("ok", "locked_increment", id, next);
    } catch (const avout::Error& error) {
      history.record("info", "locked_increment", id, error.what());
      std::this_thread::sleep_for(50ms);
    }
  }
}

class Workload {
 public:
  Workload() : prefix_(unique_name("bank")), directory_(make_directory()) {
    until_done(scaled(60s), [&] {
      Bank setup(prefix_);  // accounts exist before the clients race to create them
      const std::string counter = setup.client.options().root + "/fault-counters" + prefix_;
      setup.client.session().create_recursive(counter);
      setup.client.session().set(counter, avout::to_bytes("0"));
    });
    for (int i = 0; i < clients; ++i) start(i);
  }
  ~Workload() {
    if (keep_)
      std::printf("histories kept in %s\n", directory_.c_str());
    else
      std::filesystem::remove_all(directory_);
  }

  void start(int index) {
    children_[index] = std::make_unique<avout::testing::ChildProcess>(
        index, [this](int i) { run_client(prefix_, directory_, i); });
  }
  avout::testing::ChildProcess& child(int index) { return *children_.at(index); }
  std::vector<int> indices() const {
    std::vector<int> all;
    for (const auto& [index, child] : children_) all.push_back(index);
    return all;
  }
  void retire(int index) { children_.erase(index); }

  // Stops every client, then checks the histories against the state.
  void stop_and_check() {
    // Progress is asked of the workload, not of the machine: on a loaded one the clients'
    // setup alone can take most of the fault schedule, so give them time to show it.
    const auto progress_deadline = std::chrono::steady_clock::now() + scaled(60s);
    while (acknowledged_transfers() <= 20 && std::chrono::steady_clock::now() < progress_deadline) {
      std::this_thread::sleep_for(200ms);
    }
    std::ofstream(directory_ / "stop").put('\n');
    for (auto& [index, child] : children_) CHECK(child->wait(scaled(120s)) == 0);
    children_.clear();

    std::unique_ptr<Bank> bank;
    until_done(scaled(60s), [&] { bank = std::make_unique<Bank>(prefix_); });
    const auto events = avout::testing::read_histories(directory_.string());
    const auto operations = avout::testing::pair_operations(events);
    std::vector<long> balances;
    std::vector<long> ledger_ids;
    int writers = 0;
    for (const auto& [id, operation] : operations)
      writers = std::max(writers, static_cast<int>(id / 1000000) + 1);
    bank->client.dosync([&] {
      balances.clear();
      ledger_ids.clear();
      for (auto& account : bank->accounts) balances.push_back(account.deref());
      for (int index = 0; index < writers; ++index) {
        const auto entries = bank->ledger(prefix_, index).deref();
        for (std::size_t at = 0; at < entries.size(); at += 4) ledger_ids.push_back(entries[at]);
      }
    });
    long total = 0;
    for (long balance : balances) total += balance;
    CHECK(total == accounts_count * initial);
    std::size_t acknowledged = 0;
    for (const auto& [id, operation] : operations) {
      if (operation.f == "transfer" && operation.outcome == "ok") ++acknowledged;
    }
    CHECK(acknowledged > 20);  // the workload made progress through the faults
    for (const auto& problem :
         avout::testing::check_bank(operations, ledger_ids, balances, initial)) {
      FAIL_CHECK(problem);
      keep_ = true;
    }
    for (const auto& problem : avout::testing::check_counter(operations, bank->counter.deref())) {
      FAIL_CHECK(problem);
      keep_ = true;
    }
    // The lock: no increment lost or doubled, and no node of a dead process left once the
    // sessions of the killed clients have ended.
    auto& session = bank->client.session();
    const auto bytes = session.get(bank->client.options().root + "/fault-counters" + prefix_).data;
    const long locked_total = std::stol(std::string(bytes.begin(), bytes.end()));
    long acknowledged_locked = 0, unknown_locked = 0;
    for (const auto& [id, operation] : operations) {
      if (operation.f != "locked_increment") continue;
      if (operation.outcome == "ok") ++acknowledged_locked;
      if (operation.outcome == "info") ++unknown_locked;
    }
    CHECK(locked_total >= acknowledged_locked);
    CHECK(locked_total <= acknowledged_locked + unknown_locked);
    const std::string waiting =
        avout::inspect::lock_path(bank->client, prefix_ + "/lock") + "/writers";
    const auto lock_deadline = std::chrono::steady_clock::now() + scaled(20s);
    while (!session.children(waiting).empty() && std::chrono::steady_clock::now() < lock_deadline) {
      std::this_thread::sleep_for(200ms);
    }
    CHECK(session.children(waiting).empty());
  }

 private:
  std::size_t acknowledged_transfers() const {
    std::size_t count = 0;
    for (const auto& event : avout::testing::read_histories(directory_.string())) {
      if (event.at("type") == "ok" && event.at("f") == "transfer") ++count;
    }
    return count;
  }

  static std::filesystem::path make_directory() {
    static std::mt19937_64 random{std::random_device{}()};
    auto path =
        std::filesystem::temp_directory_path() / ("avout-history-" + std::to_string(random()));
    std::filesystem::create_directories(path);
    return path;
  }

  std::string prefix_;
  std::filesystem::path directory_;
  std::map<int, std::unique_ptr<avout::testing::ChildProcess>> children_;
  bool keep_ = false;  // a failed check keeps the histories for a look
};

void start_servers() { (void)cluster(); }

}  // namespace

TEST_CASE("bank and counter survive clients SIGKILLed mid-transaction and restarted") {
  start_servers();
  Workload workload;
  std::mt19937 random(42);
  int next_index = clients;
  for (int kill = 0; kill < 6; ++kill) {
    std::this_thread::sleep_for(std::chrono::milliseconds(400 + random() % 600));
    auto indices = workload.indices();
    const int victim = indices[random() % indices.size()];
    workload.child(victim).signal(SIGKILL);
    CHECK(workload.child(victim).wait(scaled(10s)) == 128 + SIGKILL);
    workload.retire(victim);
    workload.start(next_index++);
    REQUIRE(next_index <= most_clients);
  }
  std::this_thread::sleep_for(1s);
  workload.stop_and_check();
}

TEST_CASE("bank and counter survive the ZooKeeper leader being killed and restarted") {
  start_servers();
  Workload workload;
  std::this_thread::sleep_for(2s);
  const int leader = cluster().zookeeper.leader();
  REQUIRE(leader >= 0);
  cluster().zookeeper.kill(leader);
  std::this_thread::sleep_for(3s);
  cluster().zookeeper.restart(leader);
  cluster().zookeeper.wait_for_quorum();
  std::this_thread::sleep_for(2s);
  workload.stop_and_check();
}

TEST_CASE("bank and counter survive a client frozen past its session timeout") {
  start_servers();
  Workload workload;
  std::this_thread::sleep_for(1s);
  workload.child(3).signal(SIGSTOP);
  std::this_thread::sleep_for(9s);  // more than twice the 4 s session timeout
  workload.child(3).signal(SIGCONT);
  std::this_thread::sleep_for(3s);  // it notices the expiry, renews and goes on
  workload.stop_and_check();
}

TEST_CASE("bank and counter survive Redis and PostgreSQL restarts") {
  start_servers();
  Workload workload;
  std::this_thread::sleep_for(1500ms);
  cluster().redis.stop();
  std::this_thread::sleep_for(1s);
  cluster().redis.start();
  std::this_thread::sleep_for(1500ms);
  cluster().postgres.stop();
  std::this_thread::sleep_for(1s);
  cluster().postgres.start();
  std::this_thread::sleep_for(2s);
  workload.stop_and_check();
}
