#include "workloads.hpp"

#include "timing_store.hpp"

#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <stdexcept>
#include <thread>
#include <tuple>

namespace avout::bench {

namespace {

// Refs named prefix/0..k-1, placed at `where` (a store's name or "mixed": see Stores::index).
std::vector<Ref<long>> make_refs(Stores& stores, const std::string& prefix, int k,
                                 const std::string& where) {
  std::vector<Ref<long>> refs;
  for (int i = 0; i < k; ++i) {
    refs.push_back(
        stores.client.ref<long>(prefix + "/" + std::to_string(i), 1000, stores.store(where, i)));
  }
  return refs;
}
// The store calls behind the read-write rows: per commit, the values written (before the
// multi, on the committing thread) and the versions trimmed and erased afterwards (on the
// client's background thread, which still takes the same two cores and the same server).
void print_store_calls(Stores& stores, int commits) {
  std::printf("\n== stm: store calls per read-write commit (the k refs in one store) ==\n");
  std::printf("%-28s %10s %10s %10s %12s %10s %10s %10s\n", "refs", "commit ms", "write calls",
              "write ms", "erase calls", "erased", "erase ms", "reads");
  for (const std::string where : {"redis", "postgres"}) {
    for (int k : {1, 8}) {
      StoreTally tally;
      TimingStore timed(stores.store(where), tally);
      const std::string prefix = unique_name("store-calls-" + where);
      std::vector<Ref<long>> refs;
      for (int i = 0; i < k; ++i)
        refs.push_back(stores.client.ref<long>(prefix + "/" + std::to_string(i), 0, timed));
      auto commit = [&] {
        stores.client.dosync([&] {
          for (auto& ref : refs) ref.alter([](long v) { return v + 1; });
        });
      };
      commit();  // warm, and its erasures done before counting
      const auto settle = [&](std::uint64_t erased) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (tally.erases < erased && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      };
      settle(static_cast<std::uint64_t>(k));
      tally.reset();
      const auto started = std::chrono::steady_clock::now();
      for (int i = 0; i < commits; ++i) commit();
      const std::chrono::duration<double, std::milli> committing =
          std::chrono::steady_clock::now() - started;
      settle(static_cast<std::uint64_t>(k) *
             static_cast<std::uint64_t>(commits));  // one trimmed per ref
      const double n = commits;
      std::printf(
          "%-28s %10.3f %10.2f %10.3f %12.2f %10.2f %10.3f %10.2f\n",
          ("k=" + std::to_string(k) + ", " + where).c_str(), committing.count() / n,
          static_cast<double>(tally.write_calls) / n, static_cast<double>(tally.write_ns) / 1e6 / n,
          static_cast<double>(tally.erase_calls) / n, static_cast<double>(tally.erases) / n,
          static_cast<double>(tally.erase_ns) / 1e6 / n, static_cast<double>(tally.reads) / n);
    }
  }
}

// Reads of refs another client has just changed: their cached heads are gone, so deref()
// one after another waits for each head in turn, where deref_all asks for all of them with
// the read point. The other client's commit before each read is not timed.
void print_fresh_reads(const Servers& servers, Stores& stores, const Floors& floors, int n) {
  constexpr int k = 8;
  Stores writer(servers);
  const std::string prefix = unique_name("stm-fresh");
  auto mine = make_refs(stores, prefix, k, "redis");
  auto theirs = make_refs(writer, prefix, k, "redis");
  std::vector<Result> rows;
  auto time_reads = [&](const std::string& how, const std::function<long()>& read) {
    std::vector<double> latencies;
    long total = 0;
    for (int i = 0; i < n; ++i) {
      writer.client.dosync([&] {
        for (auto& ref : theirs) ref.alter([](long v) { return v + 1; });
      });
      const auto start = std::chrono::steady_clock::now();
      total += read();
      latencies.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    if (total <= 0) throw std::logic_error("bench: fresh reads summed to " + std::to_string(total));
    Result row =
        summarize("read-only txn, k=8, just changed elsewhere: " + how + ", redis", latencies);
    row.floor_ms = floors.zookeeper_get;
    row.floor_name = "zookeeper get";
    rows.push_back(row);
  };
  time_reads("deref one by one", [&] {
    return stores.client.dosync([&] {
      long sum = 0;
      for (auto& ref : mine) sum += ref.deref();
      return sum;
    });
  });
  time_reads("deref_all", [&] {
    return stores.client.dosync([&] {
      const auto values =
          deref_all(mine[0], mine[1], mine[2], mine[3], mine[4], mine[5], mine[6], mine[7]);
      return std::apply([](auto... v) { return (v + ...); }, values);
    });
  });
  print_table("stm: reading refs another client just changed", rows);
}

}  // namespace

void run_stm_workloads(const Settings& settings, const Servers& servers, const Floors& floors) {
  std::vector<Result> rows;
  const int n = settings.iterations(500);
  Stores stores(servers);
  for (const auto& where : placements(servers)) {
    for (int k : {1, 2, 4, 8}) {
      auto refs = make_refs(stores, unique_name("stm-" + where), k, where);
      auto measure = [&](const std::string& label, double floor, const std::string& floor_name,
                         const std::function<void()>& transaction) {
        transaction();  // warm: heads and tags are cached from here on
        Result row = summarize(label + ", k=" + std::to_string(k) + ", " + where,
                               measure_client(stores.client, n, transaction));
        row.floor_ms = floor;
        row.floor_name = floor_name;
        rows.push_back(row);
      };
      measure("read-only txn", floors.zookeeper_get, "zookeeper get", [&] {
        stores.client.dosync([&] {
          long sum = 0;
          for (auto& ref : refs) sum += ref.deref();
          return sum;
        });
      });
      measure("read-write txn", floors.zookeeper_multi, "zookeeper multi", [&] {
        stores.client.dosync([&] {
          for (auto& ref : refs) ref.alter([](long v) { return v + 1; });
        });
      });
    }
  }
  print_table("stm: uncontended transactions over k refs", rows);
  print_store_calls(stores, n);
  print_fresh_reads(servers, stores, floors, settings.iterations(200));

  const std::string bank = unique_name("stm-bank");
  { (void)make_refs(stores, bank, 20, mixed); }
  const int transfers = settings.iterations(250);
  Result contended = run_processes("bank transfer, 8 processes, 20 mixed refs", 8, [&](int index) {
    Stores own(servers);
    auto accounts = make_refs(own, bank, 20, mixed);
    std::mt19937 random(static_cast<unsigned>(index) + 1);
    return measure_client(own.client, transfers, [&] {
      const auto from = random() % 20, to = (from + 1 + random() % 19) % 20;
      transfer(own.client, accounts[from], accounts[to]);
    });
  });
  contended.floor_ms = floors.zookeeper_multi;
  contended.floor_name = "zookeeper multi";
  print_table("stm: contended bank", {contended});
}

}  // namespace avout::bench
