#pragma once
// Timing and reporting shared by the workloads: latency samples, percentiles, one table row.

#include <avout/client.hpp>

#include <nlohmann/json.hpp>

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
  double zookeeper_round_trips = 0; ///< blocking ZooKeeper waits per operation
  double retries = 0;             ///< transaction retries per operation
  double slept_ms = 0;            ///< time slept per operation (sleep_tally)
  double floor_ms = 0;            ///< the floor this row is compared with (p50), 0: none
  std::string floor_name{};       ///< what that floor is
};

/// Runs `operation` `count` times in this process; returns per-operation latencies in ms.
std::vector<double> time_each(int count, const std::function<void()>& operation);

/// Builds a result from latencies measured in one process (throughput = 1 / mean).
Result summarize(const std::string& workload, std::vector<double> latencies_ms);

/// What one process measured: latencies and its client's counters over the operations.
struct ProcessReport {
  std::vector<double> latencies_ms{};  ///< one per operation
  double zookeeper_requests = 0;       ///< requests sent during the operations
  double zookeeper_round_trips = 0;    ///< blocking waits during the operations
  double retries = 0;                  ///< transaction retries during the operations
  double slept_ms = 0;                 ///< time slept during the operations (sleep_tally)
};

/// Runs `operation` `count` times on `client` and reports latencies and counter deltas.
ProcessReport measure_client(Client& client, int count, const std::function<void()>& operation);

/// Builds a result from one process's report (counters per operation).
Result summarize(const std::string& workload, const ProcessReport& report);

/// Runs `body(index)` in `processes` children at once; merges their reports (sent back
/// through a pipe) and computes throughput over the wall time.
Result run_processes(const std::string& workload, int processes,
                     const std::function<ProcessReport(int)>& body);

/// Prints results as a table with ratios to their floors, and records them.
void print_table(const std::string& title, const std::vector<Result>& results);

/// Every row printed so far, as JSON objects (for --json and --plot).
nlohmann::json& recorded();

/// Settings of one run.
struct Settings {
  bool quick = false;  ///< fewer iterations, for CI smoke runs
  int iterations(int full) const { return quick ? std::max(20, full / 10) : full; }
};

}  // namespace avout::bench
