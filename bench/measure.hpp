#pragma once
// Timing and reporting shared by the workloads: latency samples, percentiles, one table row.

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace avout::bench {

/// What one workload measured.
struct Result {
  std::string workload{};         ///< row label
  double operations_per_second{}; ///< throughput over all processes
  double p50_ms{};                ///< median latency
  double p99_ms{};                ///< 99th percentile latency
  double zookeeper_requests = 0;  ///< ZooKeeper requests per operation (0: none)
  double floor_ms = 0;            ///< the floor this row is compared with (p50), 0: none
  std::string floor_name{};       ///< what that floor is
};

/// Runs `operation` `count` times in this process; returns per-operation latencies in ms.
std::vector<double> time_each(int count, const std::function<void()>& operation);

/// Builds a result from latencies measured in one process (throughput = 1 / mean).
Result summarize(const std::string& workload, std::vector<double> latencies_ms);

/// Runs `body(index, latencies_out)` in `processes` children at once; merges their latencies
/// (sent back through a pipe) and computes throughput over the wall time.
Result run_processes(const std::string& workload, int processes,
                     const std::function<std::vector<double>(int)>& body);

/// Prints results as a table with ratios to their floors.
void print_table(const std::string& title, const std::vector<Result>& results);

/// Settings of one run.
struct Settings {
  bool quick = false;  ///< fewer iterations, for CI smoke runs
  int iterations(int full) const { return quick ? std::max(20, full / 10) : full; }
};

}  // namespace avout::bench
