// avout-bench: starts its own ZooKeeper, Redis and PostgreSQL (or uses given ones), warms
// them up, measures the raw floors, then each workload beside them, then avout and its peers
// side by side.
// Usage: avout-bench [--quick] [--only atom|stm|agent|peers|lock|bank|rounds|recipes]...
//                    [--json FILE]
// [--plot FILE.png]
//                    [--zookeeper H:P --redis URL --postgres URL]
#include "comparison.hpp"
#include "external_peers.hpp"
#include "report.hpp"
#include "workloads.hpp"

#include "support/servers.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  avout::bench::Settings settings;
  avout::bench::Servers servers;
  std::vector<std::string> only;
  std::string json_path;
  std::string plot_path;
  CLI::App app{"avout-bench: avout's workloads measured beside the raw floors of the same run"};
  app.add_flag("--quick", settings.quick, "shorter runs (a smoke test, not a measurement)");
  app.add_option("--only", only,
                 "run only these groups of workloads (repeatable; the floors always run)")
      ->check(
          CLI::IsMember({"atom", "stm", "agent", "peers", "lock", "bank", "rounds", "recipes"}));
  app.add_option("--json", json_path, "write every measurement to this JSON file");
  app.add_option("--plot", plot_path, "draw the measurements into this PNG file");
  app.add_option("--zookeeper", servers.zookeeper,
                 "use this ZooKeeper (host:port) instead of starting one");
  app.add_option("--redis", servers.redis,
                 "use this Redis (tcp://host:port) instead of starting one");
  app.add_option("--postgres", servers.postgres,
                 "use this PostgreSQL (postgresql://...) instead of starting one");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;
  }
  auto runs = [&](const std::string& group) {
    return only.empty() || std::find(only.begin(), only.end(), group) != only.end();
  };
  try {
    if (servers.zookeeper.empty())
      servers.zookeeper = avout::testing::shared_zookeeper().connect_string();
    if (servers.redis.empty()) servers.redis = avout::testing::shared_redis().url();
    if (servers.postgres.empty()) servers.postgres = avout::testing::shared_postgres().url();
    avout::bench::warm_up_servers(settings, servers);
    const auto floors =
        avout::bench::measure_floors(settings, servers.zookeeper, servers.redis, servers.postgres);
    if (runs("atom")) avout::bench::run_atom_workloads(settings, servers, floors);
    if (runs("stm")) avout::bench::run_stm_workloads(settings, servers, floors);
    if (runs("agent")) avout::bench::run_agent_workloads(settings, servers, floors);
    // One etcd for every group that measures it (null when its tools are missing).
    std::unique_ptr<avout::bench::EtcdPeer> etcd;
    if (runs("peers") || runs("rounds") || runs("recipes")) etcd = avout::bench::EtcdPeer::start();
    if (runs("peers")) {
      avout::bench::run_peer_workloads(settings, servers, floors);
      if (etcd) avout::bench::run_etcd_peer(settings, *etcd);
      avout::bench::run_curator_peer(settings, servers, floors);
    }
    if (runs("peers") || runs("rounds")) {
      avout::bench::run_interleaved_rounds(settings, servers, etcd.get());
      avout::bench::run_bank_rounds(settings, servers, etcd.get());
    }
    if (runs("lock")) avout::bench::run_lock_workloads(settings, servers, floors);
    if (runs("recipes")) avout::bench::run_recipe_workloads(settings, servers, floors, etcd.get());
    if (runs("bank")) avout::bench::run_bank_anatomy(settings, servers, floors);
    avout::bench::print_side_by_side(avout::bench::side_by_side(avout::bench::recorded()));
    if (!json_path.empty()) avout::bench::write_json(avout::bench::recorded(), json_path);
    if (!plot_path.empty()) avout::bench::draw_plot(avout::bench::recorded(), plot_path);
  } catch (const std::exception& error) {
    std::cerr << "avout-bench: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
