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
  std::string workload{};            ///< row label
  double operations_per_second{};    ///< throughput over all processes
  double p50_ms{};                   ///< median latency
  double p99_ms{};                   ///< 99th percentile latency
  double zookeeper_requests = 0;     ///< ZooKeeper requests per operation (0: none)
  double zookeeper_round_trips = 0;  ///< blocking ZooKeeper waits per operation
  double retries = 0;                ///< transaction retries per operation
  double slept_ms = 0;               ///< time slept per operation (sleep_tally)
  double floor_ms = 0;               ///< the floor this row is compared with (p50), 0: none
  std::string floor_name{};          ///< what that floor is
};

/// Runs `operation` `count` times in this process; returns per-operation latencies in ms.
std::vector<double> time_each(int count, const std::function<void()>& operation);

/// The median of `values` (0 when there are none).
double median(std::vector<double> values);

/// Builds a result from latencies measured in one process (throughput = 1 / mean).
Result summarize(const std::string& workload, std::vector<double> latencies_ms);

/// What one process measured: latencies and its client's counters over the operations.
struct ProcessReport {
  std::vector<double> latencies_ms{};  ///< one per operation
  double zookeeper_requests = 0;       ///< requests sent during the operations
  double zookeeper_round_trips = 0;    ///< blocking waits during the operations
  double retries = 0;                  ///< transaction retries during the operations
  double slept_ms = 0;                 ///< time slept during the operations (sleep_tally)
  /// When the operations began and ended, in ms of the steady clock every process of the
  /// machine shares (0: not recorded): run_processes' throughput window.
  double started_ms = 0;
  double finished_ms = 0;  ///< see started_ms
};

/// The steady clock in ms, comparable between processes of one machine (CLOCK_MONOTONIC).
double steady_ms();

/// In a child of run_processes: returns once every child has called it, so that the timed
/// operations of all start together, after each process's setup. At once elsewhere.
void wait_for_all_processes();

/// Waits for all processes, then runs `operation` `count` times; latencies and the window.
ProcessReport measure_window(int count, const std::function<void()>& operation);

/// Runs `operation` `count` times on `client` and reports latencies and counter deltas.
ProcessReport measure_client(Client& client, int count, const std::function<void()>& operation);

/// Builds a result from one process's report (counters per operation).
Result summarize(const std::string& workload, const ProcessReport& report);

/// Runs `body(index)` in `processes` children at once; merges their reports (sent back
/// through a pipe) and computes throughput over the window from the earliest start to the
/// latest end the reports recorded (the wall time, forks and setup included, when one did
/// not record it).
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
  /// How long servers and peers are driven before anything is measured (see warm_up.cpp).
  std::chrono::milliseconds warm_up() const {
    return std::chrono::milliseconds(quick ? 500 : 4000);
  }
};

}  // namespace avout::bench
