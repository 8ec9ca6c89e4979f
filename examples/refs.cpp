// Refs and transactions: values changed together by Client::dosync, with snapshot isolation,
// all or nothing, even when the refs keep their values in different stores.
//
// A small bank: a checking account in ZooKeeper, savings in Redis, a transfer count in
// PostgreSQL and a transfer limit in ZooKeeper. Shows alter, commute, ensure and ref_set in
// one dosync, and a validator that aborts a whole transaction. Every step checks its result.
//
//   export AVOUT_ZOOKEEPER=127.0.0.1:2181 AVOUT_REDIS=redis://127.0.0.1:6379
//   AVOUT_POSTGRES=postgresql://avout@127.0.0.1/avout ./avout_example_refs
//
// Exit codes: 0 all as expected, 1 a wrong result or an error, 2 usage.
#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

// The value of environment variable `name`, or "" when it is not set.
std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// Stops the program with exit code 1 when a result is not what the example expects.
void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::cerr << "refs: WRONG RESULT: " << what << "\n";
    std::exit(1);
  }
  std::cout << "  ok: " << what << "\n";
}

}  // namespace

int main() {
  const std::string zookeeper = env("AVOUT_ZOOKEEPER");
  const std::string redis_url = env("AVOUT_REDIS");
  const std::string postgres_url = env("AVOUT_POSTGRES");
  if (zookeeper.empty() || redis_url.empty() || postgres_url.empty()) {
    std::cerr
        << "usage: AVOUT_ZOOKEEPER=host:port AVOUT_REDIS=redis://host:port "
           "AVOUT_POSTGRES=postgresql://user@host:port/db avout_example_refs\n"
           "  AVOUT_ZOOKEEPER  ZooKeeper connect string (coordination, and some refs' values)\n"
           "  AVOUT_REDIS      Redis URL, redis://[[user]:password@]host:port[/db]\n"
           "  AVOUT_POSTGRES   PostgreSQL URI (avout creates its tables on first use)\n";
    return 2;
  }
  // Fresh names for every run, so the initial values below are the ones used.
  const std::string run = "/examples/refs-" + std::to_string(std::random_device{}());

  try {
    avout::Client client(zookeeper);
    avout::redis::Store redis(redis_url);
    avout::postgres::Store postgres(postgres_url);

    // client.ref<T>(name, initial[, store]): the initial value is used only if the ref is new.
    auto checking = client.ref<long>(run + "/checking", 100);            // in ZooKeeper
    auto savings = client.ref<long>(run + "/savings", 50, redis);        // in Redis
    auto transfers = client.ref<long>(run + "/transfers", 0, postgres);  // in PostgreSQL
    auto limit = client.ref<long>(run + "/limit", 30);                   // in ZooKeeper
    std::cout << "refs under " << run << ": checking 100 (ZooKeeper), savings 50 (Redis), "
              << "transfers 0 (PostgreSQL), limit 30 (ZooKeeper)\n";

    // Outside dosync a ref can be read (the newest value) but not changed.
    bool refused = false;
    try {
      checking.ref_set(0);
    } catch (const avout::NoTransaction&) {
      refused = true;
    }
    expect(refused, "ref_set outside dosync throws NoTransaction");

    // One transaction across three stores. The body may run more than once (on conflicts),
    // so it has no side effects besides the refs; it commits all of its changes or none.
    std::cout << "dosync: move min(25, limit) from checking to savings, count the transfer\n";
    const long total = client.dosync([&] {
      // ensure: read the limit and keep other transactions from changing it until we commit.
      const long amount = std::min(25L, limit.ensure());
      // alter: value = f(value, args...), from this transaction's snapshot.
      checking.alter([](long value, long moved) { return value - moved; }, amount);
      savings.alter([](long value, long moved) { return value + moved; }, amount);
      // commute: applied again to the newest value at commit, so concurrent counting never
      // makes this transaction retry.
      transfers.commute([](long count) { return count + 1; });
      // Reads inside see the transaction's own writes.
      return checking.deref() + savings.deref();
    });
    expect(total == 150, "the transaction saw 150 in total");
    expect(checking.deref() == 75 && savings.deref() == 75, "checking 75, savings 75");
    expect(transfers.deref() == 1, "one transfer counted (PostgreSQL)");

    // ref_set: set a value outright.
    std::cout << "dosync: ref_set limit = 10\n";
    client.dosync([&] { limit.ref_set(10); });
    expect(limit.deref() == 10, "limit is 10");

    // Commutes from many threads (or processes) at once: each commits without retrying its body.
    std::cout << "4 threads x 5 transactions commute the transfer count\n";
    std::atomic<int> failed_threads{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        try {
          for (int i = 0; i < 5; ++i) {
            client.dosync([&] { transfers.commute([](long count) { return count + 1; }); });
          }
        } catch (const avout::Error& error) {
          std::cerr << "refs: " << error.what() << "\n";
          ++failed_threads;
        }
      });
    }
    for (auto& thread : threads) thread.join();
    expect(failed_threads == 0 && transfers.deref() == 21, "transfer count is 21");

    // A validator runs before every commit that changes its ref; a rejected value aborts the
    // whole transaction, in every store.
    std::cout << "validator: checking never below 0; try to move 1000\n";
    checking.set_validator([](const long& value) { return value >= 0; });
    bool aborted = false;
    try {
      client.dosync([&] {
        checking.alter([](long value) { return value - 1000; });
        savings.alter([](long value) { return value + 1000; });
        transfers.commute([](long count) { return count + 1; });
      });
    } catch (const avout::ValidationError& error) {
      aborted = true;
      std::cout << "  aborted: " << error.what() << "\n";
    }
    expect(aborted, "the transaction was aborted with ValidationError");
    expect(checking.deref() == 75 && savings.deref() == 75 && transfers.deref() == 21,
           "nothing changed: checking 75, savings 75, transfers 21");

    const auto [commits, retries] = client.transaction_counts();
    std::cout << "refs: all results as expected (" << commits << " commits, " << retries
              << " retries)\n";
    return 0;
  } catch (const avout::Error& error) {
    std::cerr << "refs: " << error.what() << "\n";
    return 1;
  }
}
