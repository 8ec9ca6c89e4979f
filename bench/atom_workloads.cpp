#include "workloads.hpp"

#include <cstdio>
#include <random>

namespace avout::bench {

namespace {

// `count` swaps(+1) of `counter`; the report's retries are the compare-and-sets that lost
// (swap's function runs once per attempt).
ProcessReport swaps(Client& client, Atom<long>& counter, int count) {
  double attempts = 0;
  auto report = measure_client(client, count, [&] {
    counter.swap([&](long v) {
      ++attempts;
      return v + 1;
    });
  });
  report.retries = attempts - count;
  return report;
}
}  // namespace

void run_atom_workloads(const Settings& settings, const Servers& servers, const Floors& floors) {
  std::vector<Result> rows;
  const int n = settings.iterations(1000);
  for (const StoreUrl& of : store_urls(servers)) {
    const std::string name = unique_name("atom-" + of.name);
    {
      Stores stores(servers);
      auto counter = stores.client.atom<long>(name, 0, stores.store(of.name));
      Result row = summarize("swap, 1 process, " + of.name, swaps(stores.client, counter, n));
      row.floor_ms = floors.*of.floor;
      row.floor_name = of.name + " get+set";
      rows.push_back(row);
    }
    Result contended = run_processes("swap, 8 processes, " + of.name, 8, [&](int) {
      Stores stores(servers);
      auto counter = stores.client.atom<long>(name, 0, stores.store(of.name));
      return swaps(stores.client, counter, n / 4);
    });
    contended.floor_ms = floors.*of.floor;
    contended.floor_name = of.name + " get+set";
    rows.push_back(contended);
  }
  print_table("atom: swap(+1)", rows);
  std::printf("(retries: compare-and-sets lost per swap)\n");
  for (const auto& row : rows)
    std::printf("%-40s slept %.3f ms per swap\n", row.workload.c_str(), row.slept_ms);
}

}  // namespace avout::bench
