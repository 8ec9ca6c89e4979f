// The transaction protocol's finer rules against real servers: barging (old transactions do
// not starve), adaptive history, ZooKeeper values inside the commit multi, gc during commits.
#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>
#include <avout/zookeeper.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/protocol-test", stem);
}

void start_servers() {
  (void)avout::testing::shared_zookeeper();
  (void)avout::testing::shared_redis();
  (void)avout::testing::shared_postgres();
}

avout::ClientOptions options(std::size_t retry_limit = 10000) {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 6000ms,
                              .retry_limit = retry_limit};
}

std::vector<avout::Ref<long>> refs(avout::Client& client, avout::Store& store,
                                   const std::string& prefix, int count) {
  std::vector<avout::Ref<long>> made;
  for (int i = 0; i < count; ++i) {
    made.push_back(client.ref<long>(prefix + "/r" + std::to_string(i), 0, store));
  }
  return made;
}

}  // namespace

TEST_CASE("an old transaction is not starved by a stream of young ones (barging)") {
  start_servers();
  const std::string prefix = unique_name("barging");
  constexpr int refs_count = 5;
  constexpr int hammers = 3;
  {
    avout::Client setup(options());
    avout::redis::Store redis(avout::testing::shared_redis().url());
    (void)refs(setup, redis, prefix, refs_count);
    (void)setup.ref<long>(prefix + "/count", 0, redis);
  }
  const auto codes = avout::testing::run_in_processes(
      hammers + 1,
      [&](int index) {
        // The long transaction gets few attempts: without barging, a 150 ms body never
        // finds a quiet moment on five refs that three processes keep changing.
        avout::Client client(options(index == hammers ? 40 : 10000));
        avout::redis::Store redis(avout::testing::shared_redis().url());
        auto all = refs(client, redis, prefix, refs_count);
        auto count = client.ref<long>(prefix + "/count", 0, redis);
        const auto stop = std::chrono::steady_clock::now() + scaled(6s);
        if (index == hammers) {
          std::this_thread::sleep_for(300ms);  // let the stream of young commits start
          int runs = 0;
          client.dosync([&] {
            ++runs;
            for (auto& ref : all) ref.alter([](long v) { return v + 1000; });
            std::this_thread::sleep_for(150ms);
          });
          // Claims go out after 3 failed attempts; the attempt after them commits. (Without
          // claims it runs until the young stream ends: about 40 times here.)
          if (runs > 10) throw std::runtime_error("ran " + std::to_string(runs) + " times");
          return;
        }
        std::mt19937 random(static_cast<unsigned>(index) + 1);
        while (std::chrono::steady_clock::now() < stop) {
          auto& ref = all[random() % refs_count];
          client.dosync([&] {
            ref.alter([](long v) { return v + 1; });
            count.commute([](long v) { return v + 1; });
          });
        }
      },
      scaled(120s));
  CHECK(codes == std::vector<int>(hammers + 1, 0));

  avout::Client client(options());
  avout::redis::Store redis(avout::testing::shared_redis().url());
  auto all = refs(client, redis, prefix, refs_count);
  auto count = client.ref<long>(prefix + "/count", 0, redis);
  long sum = 0;
  for (auto& ref : all) {
    CHECK(ref.deref() >= 1000);
    sum += ref.deref();
  }
  CHECK(sum == refs_count * 1000 + count.deref());
  // Every claim ended with its transaction.
  for (int i = 0; i < refs_count; ++i) {
    CHECK(!avout::inspect::tag_owner(client, prefix + "/r" + std::to_string(i)).has_value());
  }
}

TEST_CASE("history grows where snapshot reads missed it, and is trimmed otherwise") {
  start_servers();
  // Read points of their own (snapshot isolation): a validated attempt reads the newest entry
  // only, with nothing to miss.
  auto usual = options();
  usual.isolation = avout::Isolation::snapshot;
  avout::Client client(usual);
  avout::redis::Store redis(avout::testing::shared_redis().url());
  const std::string prefix = unique_name("history");
  auto x = client.ref<long>(prefix + "/x", 0, redis);
  auto s = client.ref<long>(prefix + "/s", 0, redis);
  auto stored_points = [&] {
    return redis.reference_data(client.ref_value_key(x.name()))->points().size();
  };
  // Trimmed values are erased in the background after their commit: wait for the count.
  auto points_settle_at = [&](std::size_t expected) {
    const auto deadline = std::chrono::steady_clock::now() + scaled(10s);
    while (stored_points() != expected && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(10ms);
    }
    return stored_points() == expected;
  };

  for (int i = 0; i < 5; ++i) client.dosync([&] { x.alter([](long v) { return v + 1; }); });
  CHECK(points_settle_at(1));  // min_history 0: nothing older is kept until a read misses

  // A reader whose snapshot predates two commits of x misses x's history once.
  std::mutex mutex;
  std::condition_variable changed;
  bool writer_done = false;
  int reader_runs = 0;
  long seen = -1;
  std::thread reader([&] {
    client.dosync([&] {
      ++reader_runs;
      (void)s.deref();  // fixes the read point
      if (reader_runs == 1) {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return writer_done; });
      }
      seen = x.deref();
    });
  });
  std::thread writer([&] {
    for (int i = 0; i < 2; ++i) client.dosync([&] { x.alter([](long v) { return v + 1; }); });
    std::lock_guard lock(mutex);
    writer_done = true;
    changed.notify_all();
  });
  writer.join();
  reader.join();
  CHECK(reader_runs == 2);
  CHECK(seen == 7);

  // The miss makes this process's next commit of x keep one older version.
  client.dosync([&] { x.alter([](long v) { return v + 1; }); });
  CHECK(points_settle_at(2));
  client.dosync([&] { x.alter([](long v) { return v + 1; }); });
  CHECK(points_settle_at(2));
  CHECK(x.deref() == 9);
}

TEST_CASE("ClientOptions with min_history above max_history are refused") {
  start_servers();
  auto bad = options();
  bad.min_history = 11;
  bad.max_history = 10;
  CHECK_THROWS_AS(avout::Client{bad}, avout::Error);
}

TEST_CASE("a ZooKeeper ref's value is created by the commit multi itself") {
  start_servers();
  auto keep_all = options();
  keep_all.min_history = keep_all.max_history;  // no trimmed value to erase in between
  avout::Client client(keep_all);
  avout::redis::Store redis(avout::testing::shared_redis().url());
  const std::string prefix = unique_name("in-multi");
  auto in_zookeeper = client.ref<std::string>(prefix + "/zk", "a");
  auto in_redis = client.ref<std::string>(prefix + "/redis", "a", redis);
  auto cost = [&](auto& ref, const std::string& value) {
    client.dosync([&] { ref.ref_set("warm"); });  // same path: head known to be new
    const auto before = client.session().statistics();
    client.dosync([&] { ref.ref_set(value); });
    const auto after = client.session().statistics();
    return std::pair{after.requests - before.requests,
                     after.multi_operations - before.multi_operations};
  };
  const auto zookeeper_cost = cost(in_zookeeper, "b");
  const auto redis_cost = cost(in_redis, "b");
  // Same ZooKeeper requests; the value's create is one more operation inside the multi.
  CHECK(zookeeper_cost.first == redis_cost.first);
  CHECK(zookeeper_cost.second == redis_cost.second + 1);
  CHECK(in_zookeeper.deref() == "b");

  // A value too big to share the multi is stored before it, and still commits atomically.
  const std::string big(600 * 1000, 'x');
  client.dosync([&] {
    in_zookeeper.ref_set(big);
    in_redis.ref_set("with-big");
  });
  CHECK(in_zookeeper.deref() == big);
  CHECK(in_redis.deref() == "with-big");
  // Over the node limit: ValueTooLarge before anything is written.
  const std::string too_big(1100 * 1000, 'y');
  CHECK_THROWS_AS(client.dosync([&] {
    in_redis.ref_set("never");
    in_zookeeper.ref_set(too_big);
  }),
                  avout::ValueTooLarge);
  CHECK(in_redis.deref() == "with-big");
  CHECK(in_zookeeper.deref() == big);
}

TEST_CASE("gc running beside committing processes erases nothing they need") {
  start_servers();
  const std::string prefix = unique_name("gc-live");
  constexpr int accounts = 6;
  constexpr long initial = 100;
  auto make = [&](avout::Client& client, avout::redis::Store& redis,
                  avout::postgres::Store& postgres) {
    std::vector<avout::Ref<long>> made;
    for (int i = 0; i < accounts; ++i) {
      avout::Store& store = i % 3 == 0   ? client.default_store()
                            : i % 3 == 1 ? static_cast<avout::Store&>(redis)
                                         : static_cast<avout::Store&>(postgres);
      made.push_back(client.ref<long>(prefix + "/a" + std::to_string(i), initial, store));
    }
    return made;
  };
  {
    avout::Client setup(options());
    avout::redis::Store redis(avout::testing::shared_redis().url());
    avout::postgres::Store postgres(avout::testing::shared_postgres().url());
    (void)make(setup, redis, postgres);
  }
  const auto codes = avout::testing::run_in_processes(
      4,
      [&](int index) {
        avout::Client client(options());
        avout::redis::Store redis(avout::testing::shared_redis().url());
        avout::postgres::Store postgres(avout::testing::shared_postgres().url());
        auto all = make(client, redis, postgres);
        if (index == 3) {
          for (int round = 0; round < 15; ++round) (void)client.gc({redis, postgres});
          return;
        }
        std::mt19937 random(static_cast<unsigned>(index) + 11);
        for (int i = 0; i < 60; ++i) {
          const int from = static_cast<int>(random() % accounts);
          const int to = (from + 1) % accounts;
          client.dosync([&] {
            all[from].alter([](long v) { return v - 1; });
            all[to].alter([](long v) { return v + 1; });
          });
          const long sum = client.dosync([&] {
            long total = 0;
            for (auto& ref : all) total += ref.deref();
            return total;
          });
          if (sum != accounts * initial) throw std::runtime_error("total " + std::to_string(sum));
        }
      },
      scaled(180s));
  CHECK(codes == std::vector<int>(4, 0));
}
