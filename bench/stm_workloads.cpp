#include "workloads.hpp"

#include <random>

namespace avout::bench {

namespace {
std::string unique(const std::string& stem) {
  return "/bench/" + stem + "-" + std::to_string(std::random_device{}());
}

// Refs named prefix/0..k-1, placed at `where` (a store's name or "mixed": see Stores::index).
std::vector<Ref<long>> make_refs(Stores& stores, const std::string& prefix, int k, const std::string& where) {
  std::vector<Ref<long>> refs;
  for (int i = 0; i < k; ++i) {
    refs.push_back(stores.client.ref<long>(prefix + "/" + std::to_string(i), 1000, stores.store(where, i)));
  }
  return refs;
}
}  // namespace

void run_stm_workloads(const Settings& settings, const Servers& servers, const Floors& floors) {
  std::vector<Result> rows;
  const int n = settings.iterations(500);
  Stores stores(servers);
  std::vector<std::string> placements;
  for (const auto& store : stores.urls) placements.push_back(store.name);
  placements.push_back(mixed);
  for (const auto& where : placements) {
    for (int k : {1, 2, 4, 8}) {
      auto refs = make_refs(stores, unique("stm-" + where), k, where);
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

  const std::string bank = unique("stm-bank");
  { (void)make_refs(stores, bank, 20, mixed); }
  const int transfers = settings.iterations(250);
  Result contended = run_processes("bank transfer, 8 processes, 20 mixed refs", 8, [&](int index) {
    Stores own(servers);
    auto accounts = make_refs(own, bank, 20, mixed);
    std::mt19937 random(static_cast<unsigned>(index) + 1);
    return measure_client(own.client, transfers, [&] {
      const auto from = random() % 20, to = (from + 1 + random() % 19) % 20;
      own.client.dosync([&] {
        accounts[from].alter([](long v) { return v - 1; });
        accounts[to].alter([](long v) { return v + 1; });
      });
    });
  });
  contended.floor_ms = floors.zookeeper_multi;
  contended.floor_name = "zookeeper multi";
  print_table("stm: contended bank", {contended});
}

}  // namespace avout::bench
