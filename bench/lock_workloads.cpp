// bench/lock: Gaggle's benchmark — 10 processes each run 100 short tasks under a lock, on one
// key (worst case) and on a key of their own (best case) — for avout's mutex and every lease
// lock strategy, beside Redis SET NX PX (the usual Redis lock) on the same server. Plus the
// uncontended acquire + release latency with ZooKeeper requests per acquisition.
#include "raw_redis.hpp"
#include "workloads.hpp"

#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include <map>
#include <mutex>
#include <random>
#include <thread>

namespace avout::bench {

namespace {

constexpr int processes = 10;

// A lock strategy as the benchmark drives it: take `key`, run the task, release.
using Locker = std::function<void(const std::string& key)>;

// Makes the locker of one strategy inside a benchmark process.
using LockerFactory = std::function<Locker(Stores& stores)>;

Locker mutex_locker(Stores& stores, const std::string& name) {
  auto locks = std::make_shared<std::map<std::string, Lock>>();  // one lock object per key
  return [&stores, name, locks](const std::string& key) {
    auto found = locks->find(key);
    if (found == locks->end())
      found = locks->emplace(key, stores.client.lock(name + "/" + key)).first;
    std::scoped_lock held(found->second);
    short_task();
  };
}

Locker lease_locker(std::shared_ptr<LeaseLock> lease_lock) {
  return [lease_lock](const std::string& key) {
    auto lease = lease_lock->lock(
        key, {.duration = std::chrono::seconds(5), .max_wait = std::chrono::seconds(60)});
    short_task();
    lease_lock->unlock(lease);
  };
}

// The common Redis lock: SET key token NX PX, polled; released by a token-checked script.
Locker redis_set_nx_locker(const std::string& url, const std::string& prefix) {
  auto redis = std::make_shared<RawRedis>(url);
  return [redis, prefix](const std::string& key) {
    const std::string token = std::to_string(std::random_device{}());
    while (redis->command({"SET", prefix + key, token, "NX", "PX", "5000"})->type ==
           REDIS_REPLY_NIL) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    short_task();
    redis->command({"EVAL",
                    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', "
                    "KEYS[1]) end return 0",
                    "1", prefix + key, token});
  };
}

}  // namespace

void run_lock_workloads(const Settings& settings, const Servers& servers, const Floors& floors) {
  std::vector<Result> rows;
  const int operations = settings.iterations(100);
  const std::string run = unique_name("locks");
  const std::string redis_prefix = "bench-nx-" + std::to_string(std::random_device{}()) + ":";
  const std::vector<std::pair<std::string, LockerFactory>> strategies{
      {"avout Lock (ZooKeeper)",
       [&](Stores& stores) { return mutex_locker(stores, run + "/mutex"); }},
      {"LeaseLock zookeeper",
       [&](Stores& stores) {
         return lease_locker(std::make_shared<LeaseLock>(stores.client.lease_lock(run + "/lease")));
       }},
      {"LeaseLock redis",
       [&](Stores& stores) {
         return lease_locker(std::make_shared<LeaseLock>(
             redis::lease_lock(dynamic_cast<redis::Store&>(stores.store("redis")), run)));
       }},
      {"LeaseLock postgres",
       [&](Stores& stores) {
         return lease_locker(std::make_shared<LeaseLock>(
             postgres::lease_lock(dynamic_cast<postgres::Store&>(stores.store("postgres")), run)));
       }},
      {"Redis SET NX PX (peer)",
       [&](Stores&) { return redis_set_nx_locker(servers.redis, redis_prefix); }},
  };
  for (const auto& strategy : strategies) {
    // Named, not bound: clang 14 cannot capture a structured binding in a lambda.
    const auto& label = strategy.first;
    const auto& make = strategy.second;
    {
      Stores stores(servers);
      auto locker = make(stores);
      Result row = summarize(
          "acquire + release, 1 process: " + label,
          measure_client(stores.client, settings.iterations(300), [&] { locker("solo"); }));
      row.floor_ms = floors.zookeeper_get_set;
      row.floor_name = "zookeeper get+set";
      rows.push_back(row);
    }
    for (const bool one_key : {true, false}) {
      Result row = run_processes(
          std::string(one_key ? "10 processes, one key: " : "10 processes, own keys: ") + label,
          processes, [&](int index) {
            Stores stores(servers);
            auto locker = make(stores);
            const std::string key = one_key ? "shared" : "key-" + std::to_string(index);
            return measure_client(stores.client, operations, [&] { locker(key); });
          });
      row.floor_ms = floors.zookeeper_get_set;
      row.floor_name = "zookeeper get+set";
      rows.push_back(row);
    }
  }
  print_table("lock: Gaggle's benchmark (100 us task under the lock)", rows);
}

}  // namespace avout::bench
