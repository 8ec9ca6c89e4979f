#include "comparison.hpp"

#include <cstdio>
#include <utility>

namespace avout::bench {

namespace {

// A workload and who ran it, by the row names the workloads print.
struct Entry {
  std::string who;
  std::string row;
  bool avout;
};

struct Workload {
  std::string name;
  bool throughput;
  std::vector<Entry> entries;
};

std::vector<Workload> workloads() {
  std::vector<Workload> all;
  const std::vector<std::string> stores{"zookeeper", "redis", "postgres", "mixed"};
  const std::vector<std::string> isolations{"serializable", "default"};
  for (const std::string k : {"1", "2", "4", "8"}) {
    Workload rw{"read-write txn, k=" + k, false, {}};
    for (const auto& store : stores)
      rw.entries.push_back({"avout, " + store, "read-write txn, k=" + k + ", " + store, true});
    for (const auto& isolation : isolations) {
      rw.entries.push_back(
          {"etcd STM " + isolation, "read-write txn, k=" + k + ": etcd STM " + isolation, false});
    }
    all.push_back(rw);
  }
  for (const std::string k : {"1", "2", "4", "8"}) {
    const std::string row = "rounds: read-write txn, k=" + k + ": ";
    Workload rw{"read-write txn, k=" + k + ", alternating rounds", false, {}};
    for (const auto& store : stores)
      rw.entries.push_back({"avout, " + store, row + "avout, " + store, true});
    for (const auto& isolation : isolations) {
      rw.entries.push_back({"etcd STM " + isolation, row + "etcd STM " + isolation, false});
    }
    all.push_back(rw);
  }
  Workload ro{"read-only txn, k=8", false, {}};
  for (const auto& store : stores)
    ro.entries.push_back({"avout, " + store, "read-only txn, k=8, " + store, true});
  for (const auto& isolation : isolations) {
    ro.entries.push_back(
        {"etcd STM " + isolation, "read-only txn, k=8: etcd STM " + isolation, false});
  }
  all.push_back(ro);
  for (const std::string shape : {"read-only txn, k=8", "read 100 refs, write 1"}) {
    const std::string row = "rounds: " + shape + ": ";
    Workload rounds{shape + ", alternating rounds", false, {}};
    rounds.entries.push_back({"avout, zookeeper", row + "avout, zookeeper", true});
    for (const auto& isolation : isolations)
      rounds.entries.push_back({"etcd STM " + isolation, row + "etcd STM " + isolation, false});
    all.push_back(rounds);
  }
  all.push_back({"bank transfer, 8 clients, 20 accounts",
                 true,
                 {{"avout, mixed refs", "bank transfer, 8 processes, 20 mixed refs", true},
                  {"avout, redis refs", "bank transfer, 8 processes: avout (Redis refs)", true},
                  {"avout, redis refs, 8 clients in 1 process",
                   "bank transfer, 8 clients in 1 process: avout (Redis refs)", true},
                  {"avout, redis refs, 1 client, 8 threads",
                   "bank transfer, 1 client, 8 threads: avout (Redis refs)", true},
                  {"etcd STM serializable (8 clients in 1 process)",
                   "bank transfer, 8 clients in 1 process: etcd STM serializable", false},
                  {"etcd STM default (8 clients in 1 process)",
                   "bank transfer, 8 clients in 1 process: etcd STM default", false},
                  {"Redis WATCH/MULTI", "bank transfer, 8 processes: Redis WATCH/MULTI", false},
                  {"PostgreSQL SERIALIZABLE", "bank transfer, 8 processes: PostgreSQL SERIALIZABLE",
                   false}}});
  for (const std::string k : {"1", "8"}) {
    for (const std::string prefix : {"", "rounds: "}) {
      const std::string row = prefix + "ref-set in dosync, k=" + k + ": ";
      all.push_back({"ref-set in dosync, k=" + k + (prefix.empty() ? "" : ", alternating rounds"),
                     false,
                     {{"avout", row + "avout", true},
                      {"Avout 2011 recipe", row + "Avout 2011 recipe", false}}});
    }
  }
  all.push_back({"atom increment, 1 process",
                 false,
                 {{"avout swap, zookeeper", "swap, 1 process, zookeeper", true},
                  {"Curator DistributedAtomicLong",
                   "atom increment, 1 process: Curator DistributedAtomicLong", false}}});
  all.push_back({"atom increment, 8 processes",
                 true,
                 {{"avout swap, zookeeper", "swap, 8 processes, zookeeper", true},
                  {"avout swap, redis", "swap, 8 processes, redis", true},
                  {"Curator DistributedAtomicLong",
                   "atom increment, 8 processes: Curator DistributedAtomicLong", false}}});
  all.push_back(
      {"lock acquire+release, 1 process",
       false,
       {{"avout Lock", "acquire + release, 1 process: avout Lock (ZooKeeper)", true},
        {"etcd Mutex", "lock acquire+release, 1 process: etcd Mutex", false},
        {"Curator InterProcessMutex", "lock acquire+release, 1 process: Curator InterProcessMutex",
         false},
        {"Curator RW lock (write)",
         "lock acquire+release, 1 process: Curator InterProcessReadWriteLock (write)", false}}});
  all.push_back({"lock, 10 processes, one key",
                 true,
                 {{"avout Lock", "10 processes, one key: avout Lock (ZooKeeper)", true},
                  {"etcd Mutex", "lock, 10 processes, one key: etcd Mutex", false},
                  {"Curator InterProcessMutex",
                   "lock, 10 processes, one key: Curator InterProcessMutex", false},
                  {"Curator RW lock (write)",
                   "lock, 10 processes, one key: Curator InterProcessReadWriteLock (write)", false},
                  {"Curator RW lock (read)",
                   "lock, 10 processes, one key: Curator InterProcessReadWriteLock (read)", false},
                  {"Redis SET NX PX", "10 processes, one key: Redis SET NX PX (peer)", false}}});
  // The recipes (bench/recipe_workloads.cpp): each row named "<workload>: <who>".
  const auto recipe = [&](const std::string& name, bool throughput,
                          const std::vector<std::pair<std::string, bool>>& who) {
    Workload workload{name, throughput, {}};
    for (const auto& [contender, avout] : who)
      workload.entries.push_back({contender, name + ": " + contender, avout});
    all.push_back(workload);
  };
  recipe("semaphore acquire+release, 1 process", false,
         {{"avout Semaphore", true}, {"Curator InterProcessSemaphoreV2", false}});
  recipe("semaphore, 10 processes, 3 permits", true,
         {{"avout Semaphore", true}, {"Curator InterProcessSemaphoreV2", false}});
  recipe("queue put+take, 1 process", false,
         {{"avout WorkQueue", true},
          {"Curator DistributedQueue", false},
          {"Curator SimpleDistributedQueue", false}});
  recipe("queue, 4 producers + 4 workers", true,
         {{"avout WorkQueue", true}, {"Curator SimpleDistributedQueue", false}});
  recipe(
      "leader campaign+resign, 1 process", false,
      {{"avout LeaderElection", true}, {"Curator LeaderLatch", false}, {"etcd Election", false}});
  recipe(
      "leader hand-over after kill -9", false,
      {{"avout LeaderElection", true}, {"Curator LeaderLatch", false}, {"etcd Election", false}});
  return all;
}

// The last recorded row named `workload`, or null.
const nlohmann::json* find_row(const nlohmann::json& rows, const std::string& workload) {
  const nlohmann::json* found = nullptr;
  for (const auto& row : rows) {
    if (row.at("workload") == workload) found = &row;
  }
  return found;
}

}  // namespace

std::vector<Contender> side_by_side(const nlohmann::json& rows) {
  std::vector<Contender> contenders;
  for (const auto& workload : workloads()) {
    for (const auto& entry : workload.entries) {
      const nlohmann::json* row = find_row(rows, entry.row);
      if (row == nullptr) continue;
      Contender contender{workload.name, entry.who, entry.avout, workload.throughput};
      contender.value = workload.throughput ? row->at("operations_per_second").get<double>()
                                            : row->at("p50_ms").get<double>();
      const double floor_ms = row->at("floor_ms");
      if (floor_ms > 0) {
        contender.floor_ratio = row->at("p50_ms").get<double>() / floor_ms;
        char floor[96];
        std::snprintf(floor, sizeof floor, "%s %.3f ms",
                      row->at("floor").get<std::string>().c_str(), floor_ms);
        contender.floor = floor;
      }
      contenders.push_back(std::move(contender));
    }
  }
  return contenders;
}

void print_side_by_side(const std::vector<Contender>& contenders) {
  std::printf(
      "\n== avout and its peers side by side, this run (x floor: p50 over the row's floor) ==\n");
  std::string workload;
  for (const auto& c : contenders) {
    if (c.workload != workload) {
      workload = c.workload;
      std::printf("%s (%s)\n", workload.c_str(),
                  c.throughput ? "ops/s, higher is better" : "p50 ms, lower is better");
    }
    char ratio[32] = "-";
    if (c.floor_ratio > 0) std::snprintf(ratio, sizeof ratio, "%.2f", c.floor_ratio);
    std::printf("  %-6s %-48s %10.3f %8s  %s\n", c.avout ? "avout" : "peer", c.who.c_str(), c.value,
                ratio, c.floor.c_str());
  }
  std::fflush(stdout);
}

}  // namespace avout::bench
