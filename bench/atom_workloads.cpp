#include "workloads.hpp"

#include <random>

namespace avout::bench {

namespace {
std::string unique(const std::string& stem) {
  return "/bench/" + stem + "-" + std::to_string(std::random_device{}());
}
}  // namespace

void run_atom_workloads(const Settings& settings, const Servers& servers, const Floors& floors) {
  std::vector<Result> rows;
  const int n = settings.iterations(1000);
  for (const StoreUrl& of : store_urls(servers)) {
    const std::string name = unique("atom-" + of.name);
    {
      Stores stores(servers);
      auto counter = stores.client.atom<long>(name, 0, stores.store(of.name));
      Result row = summarize("swap, 1 process, " + of.name,
                             measure_client(stores.client, n, [&] {
                               counter.swap([](long v) { return v + 1; });
                             }));
      row.floor_ms = floors.*of.floor;
      row.floor_name = of.name + " get+set";
      rows.push_back(row);
    }
    Result contended = run_processes(
        "swap, 8 processes, " + of.name, 8, [&](int) {
          Stores stores(servers);
          auto counter = stores.client.atom<long>(name, 0, stores.store(of.name));
          return measure_client(stores.client, n / 4,
                                [&] { counter.swap([](long v) { return v + 1; }); });
        });
    contended.floor_ms = floors.*of.floor;
    contended.floor_name = of.name + " get+set";
    rows.push_back(contended);
  }
  print_table("atom: swap(+1)", rows);
}

}  // namespace avout::bench
