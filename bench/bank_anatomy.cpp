// The contended bank taken apart: 8 processes transfer between random accounts, and each
// process tallies where its transfers' time goes — attempts per commit (the transfer's
// function runs once per attempt), time asleep (the retry loop's back-off and barging
// waits), values written, fetched (cache misses) and erased in the value stores and the time
// those calls took, and ZooKeeper requests; what is left is waiting on ZooKeeper (head and
// tag reads, the commit multi). Timers live here only (timing_store, sleep_tally).
#include "sleep_tally.hpp"
#include "timing_store.hpp"
#include "workloads.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <random>

namespace avout::bench {

namespace {

// One process's tally, written into memory shared with the parent.
struct Tally {
  double transfers = 0, attempts = 0, retries = 0, wall_ms = 0, slept_ms = 0;
  double writes = 0, write_calls = 0, write_ms = 0, reads = 0, read_ms = 0, erases = 0,
         erase_ms = 0;
  double zookeeper_requests = 0, zookeeper_round_trips = 0, multi_operations = 0;
};

// A bank configuration: how many processes and accounts, and where the accounts live.
struct Bank {
  std::string label;
  int processes;
  int accounts;
  std::string where;  // a store's name or "mixed" (see Stores::index)
};

double ms(std::uint64_t nanoseconds) { return static_cast<double>(nanoseconds) / 1e6; }

Tally run_one(const Servers& servers, const Bank& bank, const std::string& prefix, int index,
              int transfers) {
  // Declared so that they go in this order: the accounts, the client, the timing stores.
  std::vector<StoreTally> tallies(store_urls(servers).size());
  std::vector<std::unique_ptr<TimingStore>> timed;
  auto owned = std::make_unique<Stores>(servers);
  Stores& stores = *owned;
  for (std::size_t i = 0; i < stores.handles.size(); ++i) {
    timed.push_back(std::make_unique<TimingStore>(*stores.handles[i], tallies[i]));
  }
  std::vector<Ref<long>> accounts;
  for (int i = 0; i < bank.accounts; ++i) {
    accounts.push_back(stores.client.ref<long>(prefix + "/" + std::to_string(i), 1000,
                                               *timed[stores.index(bank.where, i)]));
  }
  for (auto& t : tallies) t.reset();
  std::mt19937 random(static_cast<unsigned>(index) + 1);
  const auto sessions_before = stores.client.session().statistics();
  const auto retries_before = stores.client.transaction_counts().second;
  const auto slept_before = slept_ns();
  Tally tally;
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < transfers; ++t) {
    const auto from = random() % static_cast<unsigned>(bank.accounts);
    const auto to = (from + 1 + random() % static_cast<unsigned>(bank.accounts - 1)) %
                    static_cast<unsigned>(bank.accounts);
    transfer(stores.client, accounts[from], accounts[to], [&] { ++tally.attempts; });
  }
  tally.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  tally.transfers = transfers;
  tally.retries = static_cast<double>(stores.client.transaction_counts().second - retries_before);
  tally.slept_ms = ms(slept_ns() - slept_before);
  for (const auto& t : tallies) {
    tally.writes += static_cast<double>(t.writes.load());
    tally.write_calls += static_cast<double>(t.write_calls.load());
    tally.write_ms += ms(t.write_ns.load());
    tally.reads += static_cast<double>(t.reads.load());
    tally.read_ms += ms(t.read_ns.load());
    tally.erases += static_cast<double>(t.erases.load());
    tally.erase_ms += ms(t.erase_ns.load());
  }
  const auto sessions_after = stores.client.session().statistics();
  tally.zookeeper_requests =
      static_cast<double>(sessions_after.requests - sessions_before.requests);
  tally.zookeeper_round_trips =
      static_cast<double>(sessions_after.round_trips - sessions_before.round_trips);
  tally.multi_operations =
      static_cast<double>(sessions_after.multi_operations - sessions_before.multi_operations);
  return tally;
}

}  // namespace

void run_bank_anatomy(const Settings& settings, const Servers& servers, const Floors& floors) {
  const std::vector<Bank> banks{{"8 processes, 20 accounts, mixed stores", 8, 20, mixed},
                                {"8 processes, 20 accounts, redis", 8, 20, "redis"},
                                {"8 processes, 200 accounts, redis", 8, 200, "redis"},
                                {"1 process, 20 accounts, redis", 1, 20, "redis"}};
  const int transfers = settings.iterations(250);
  std::printf(
      "\n== bank anatomy: where a contended transfer's time goes (per commit, mean over all "
      "processes) ==\n");
  std::printf("%-40s %7s %8s %8s %8s %8s | %6s %7s | %6s %7s | %6s %7s | %7s %6s %8s\n", "bank",
              "tx/s", "attempts", "wall ms", "slept ms", "other ms", "writes", "ms", "reads", "ms",
              "erases", "ms", "zk req", "zk rtt", "multi op");
  std::vector<Result> rows;
  for (const auto& bank : banks) {
    const std::string prefix = unique_name("anatomy");
    {  // create the accounts before the processes race to
      Stores stores(servers);
      for (int i = 0; i < bank.accounts; ++i) {
        (void)stores.client.ref<long>(prefix + "/" + std::to_string(i), 1000,
                                      stores.store(bank.where, i));
      }
    }
    const std::size_t bytes = sizeof(Tally) * static_cast<std::size_t>(bank.processes);
    void* shared = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) throw std::runtime_error("mmap failed");
    auto* tallies = static_cast<Tally*>(shared);
    Result result = run_processes("bank anatomy, " + bank.label, bank.processes, [&](int index) {
      tallies[index] = run_one(servers, bank, prefix, index, transfers);
      return ProcessReport{std::vector<double>(static_cast<std::size_t>(transfers),
                                               tallies[index].wall_ms / transfers)};
    });
    Tally sum;
    for (int i = 0; i < bank.processes; ++i) {
      const Tally& t = tallies[i];
      sum.transfers += t.transfers, sum.attempts += t.attempts, sum.retries += t.retries,
          sum.wall_ms += t.wall_ms;
      sum.slept_ms += t.slept_ms, sum.writes += t.writes, sum.write_calls += t.write_calls,
          sum.write_ms += t.write_ms;
      sum.reads += t.reads, sum.read_ms += t.read_ms, sum.erases += t.erases,
          sum.erase_ms += t.erase_ms;
      sum.zookeeper_requests += t.zookeeper_requests,
          sum.zookeeper_round_trips += t.zookeeper_round_trips;
      sum.multi_operations += t.multi_operations;
    }
    // Throughput over the longest process's transfers (not the wall time of run_processes,
    // which counts forking and attaching the accounts too).
    double longest_ms = 0;
    for (int i = 0; i < bank.processes; ++i) longest_ms = std::max(longest_ms, tallies[i].wall_ms);
    result.operations_per_second = 1000 * sum.transfers / longest_ms;
    munmap(shared, bytes);
    const double n = sum.transfers;
    const double other = sum.wall_ms - sum.slept_ms - sum.write_ms - sum.read_ms - sum.erase_ms;
    std::printf(
        "%-40s %7.0f %8.2f %8.2f %8.2f %8.2f | %6.2f %7.2f | %6.2f %7.2f | %6.2f %7.2f | %7.2f "
        "%6.2f %8.2f\n",
        bank.label.c_str(), result.operations_per_second, sum.attempts / n, sum.wall_ms / n,
        sum.slept_ms / n, other / n, sum.writes / n, sum.write_ms / n, sum.reads / n,
        sum.read_ms / n, sum.erases / n, sum.erase_ms / n, sum.zookeeper_requests / n,
        sum.zookeeper_round_trips / n, sum.multi_operations / n);
    result.retries = sum.retries / n;
    result.zookeeper_requests = sum.zookeeper_requests / n;
    result.zookeeper_round_trips = sum.zookeeper_round_trips / n;
    result.floor_ms = floors.zookeeper_multi;
    result.floor_name = "zookeeper multi";
    rows.push_back(result);
  }
  std::printf(
      "(other ms: waiting on ZooKeeper — head and tag reads, the commit multi — and the client's "
      "own work)\n");
  print_table("bank anatomy: throughput (p50 here is each process's mean transfer)", rows);
}

}  // namespace avout::bench
