#include "workloads.hpp"

#include <random>

namespace avout::bench {

namespace {
std::string unique(const std::string& stem) {
  return "/bench/" + stem + "-" + std::to_string(std::random_device{}());
}

double floor_of(int kind, const Floors& floors) {
  return kind == 1 ? floors.redis_get_set : kind == 2 ? floors.postgres_get_set
                                                      : floors.zookeeper_get_set;
}
}  // namespace

void run_atom_workloads(const Settings& settings, const Servers& servers, const Floors& floors) {
  std::vector<Result> rows;
  const int n = settings.iterations(1000);
  for (int kind = 0; kind < 3; ++kind) {
    const std::string name = unique(std::string("atom-") + store_name(kind));
    {
      Stores stores(servers);
      auto counter = stores.client.atom<long>(name, 0, stores.store(kind));
      Result row = summarize(std::string("swap, 1 process, ") + store_name(kind),
                             measure_client(stores.client, n, [&] {
                               counter.swap([](long v) { return v + 1; });
                             }));
      row.floor_ms = floor_of(kind, floors);
      row.floor_name = std::string(store_name(kind)) + " get+set";
      rows.push_back(row);
    }
    Result contended = run_processes(
        std::string("swap, 8 processes, ") + store_name(kind), 8, [&](int) {
          Stores stores(servers);
          auto counter = stores.client.atom<long>(name, 0, stores.store(kind));
          return measure_client(stores.client, n / 4,
                                [&] { counter.swap([](long v) { return v + 1; }); });
        });
    contended.floor_ms = floor_of(kind, floors);
    contended.floor_name = std::string(store_name(kind)) + " get+set";
    rows.push_back(contended);
  }
  print_table("atom: swap(+1)", rows);
}

}  // namespace avout::bench
