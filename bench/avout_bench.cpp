// avout-bench: starts its own ZooKeeper, Redis and PostgreSQL (or uses given ones), measures
// the raw floors, then each workload beside them.
// Usage: avout-bench [--quick] [--only atom|stm|agent|peers|lock] [--json FILE] [--plot FILE.png]
//                    [--zookeeper H:P --redis URL --postgres URL]
#include "report.hpp"
#include "workloads.hpp"

#include "support/servers.hpp"

#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>

int main(int argc, char** argv) {
  avout::bench::Settings settings;
  avout::bench::Servers servers;
  std::string only;
  std::string json_path;
  std::string plot_path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    try {
      if (arg == "--quick") settings.quick = true;
      else if (arg == "--only") only = value();
      else if (arg == "--json") json_path = value();
      else if (arg == "--plot") plot_path = value();
      else if (arg == "--zookeeper") servers.zookeeper = value();
      else if (arg == "--redis") servers.redis = value();
      else if (arg == "--postgres") servers.postgres = value();
      else {
        std::cerr << "usage: avout-bench [--quick] [--only atom|stm|agent|peers|lock] [--json FILE] "
                     "[--plot FILE.png] [--zookeeper H:P] [--redis tcp://H:P] "
                     "[--postgres postgresql://...]\n";
        return 2;
      }
    } catch (const std::exception& error) {
      std::cerr << "avout-bench: " << error.what() << "\n";
      return 2;
    }
  }
  try {
    if (servers.zookeeper.empty()) servers.zookeeper = avout::testing::shared_zookeeper().connect_string();
    if (servers.redis.empty()) servers.redis = avout::testing::shared_redis().url();
    if (servers.postgres.empty()) servers.postgres = avout::testing::shared_postgres().url();
    const auto floors =
        avout::bench::measure_floors(settings, servers.zookeeper, servers.redis, servers.postgres);
    if (only.empty() || only == "atom") avout::bench::run_atom_workloads(settings, servers, floors);
    if (only.empty() || only == "stm") avout::bench::run_stm_workloads(settings, servers, floors);
    if (only.empty() || only == "agent") avout::bench::run_agent_workloads(settings, servers, floors);
    if (only.empty() || only == "peers") avout::bench::run_peer_workloads(settings, servers, floors);
    if (only.empty() || only == "lock") avout::bench::run_lock_workloads(settings, servers, floors);
    if (!json_path.empty()) avout::bench::write_json(avout::bench::recorded(), json_path);
    if (!plot_path.empty()) avout::bench::draw_plot(avout::bench::recorded(), plot_path);
  } catch (const std::exception& error) {
    std::cerr << "avout-bench: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
