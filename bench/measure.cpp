#include "measure.hpp"

#include "sleep_tally.hpp"
#include "support/processes.hpp"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <new>
#include <numeric>
#include <stdexcept>
#include <thread>

namespace avout::bench {

namespace {
// The children's barrier (wait_for_all_processes): a counter in memory the forked children
// share with their parent; null outside a child.
std::atomic<int>* arrived = nullptr;
int expected_processes = 0;

double percentile(std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto index = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1));
  return sorted[index];
}
}  // namespace

std::vector<double> time_each(int count, const std::function<void()>& operation) {
  std::vector<double> latencies;
  latencies.reserve(static_cast<std::size_t>(count));
  // A progress bar on a terminal (never in logs): how far this workload has come.
  const bool show = isatty(STDERR_FILENO) != 0;
  for (int i = 0; i < count; ++i) {
    if (show && (i % std::max(1, count / 20) == 0 || i + 1 == count)) {
      const int filled = (i + 1) * 20 / count;
      std::fprintf(stderr, "\r  [%.*s%.*s] %3d%%", filled, "####################", 20 - filled,
                   "                    ", (i + 1) * 100 / count);
      if (i + 1 == count) std::fprintf(stderr, "\r%30s\r", "");
    }
    const auto start = std::chrono::steady_clock::now();
    operation();
    latencies.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  return latencies;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return percentile(values, 0.5);
}

Result summarize(const std::string& workload, std::vector<double> latencies_ms) {
  std::sort(latencies_ms.begin(), latencies_ms.end());
  const double total = std::accumulate(latencies_ms.begin(), latencies_ms.end(), 0.0);
  Result result;
  result.workload = workload;
  result.operations_per_second =
      total > 0 ? 1000.0 * static_cast<double>(latencies_ms.size()) / total : 0;
  result.p50_ms = percentile(latencies_ms, 0.5);
  result.p99_ms = percentile(latencies_ms, 0.99);
  return result;
}

double steady_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void wait_for_all_processes() {
  if (arrived == nullptr) return;
  arrived->fetch_add(1);
  // Bounded: a child that failed before arriving must not hang the others.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (arrived->load() < expected_processes && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

namespace {
// Runs `operation` `count` times; latencies and the window they took.
ProcessReport timed_window(int count, const std::function<void()>& operation) {
  ProcessReport report;
  report.started_ms = steady_ms();
  report.latencies_ms = time_each(count, operation);
  report.finished_ms = steady_ms();
  return report;
}
}  // namespace

ProcessReport measure_window(int count, const std::function<void()>& operation) {
  wait_for_all_processes();
  return timed_window(count, operation);
}

ProcessReport measure_client(Client& client, int count, const std::function<void()>& operation) {
  wait_for_all_processes();  // before the counters: the barrier's sleeps are not the operations'
  const auto before = client.session().statistics();
  const auto retries_before = client.transaction_counts().second;
  const auto slept_before = slept_ns();
  ProcessReport report = timed_window(count, operation);
  const auto after = client.session().statistics();
  report.zookeeper_requests = static_cast<double>(after.requests - before.requests);
  report.zookeeper_round_trips = static_cast<double>(after.round_trips - before.round_trips);
  report.retries = static_cast<double>(client.transaction_counts().second - retries_before);
  report.slept_ms = static_cast<double>(slept_ns() - slept_before) / 1e6;
  return report;
}

Result summarize(const std::string& workload, const ProcessReport& report) {
  Result result = summarize(workload, report.latencies_ms);
  const double operations = std::max<double>(1, static_cast<double>(report.latencies_ms.size()));
  result.zookeeper_requests = report.zookeeper_requests / operations;
  result.zookeeper_round_trips = report.zookeeper_round_trips / operations;
  result.retries = report.retries / operations;
  result.slept_ms = report.slept_ms / operations;
  return result;
}

Result run_processes(const std::string& workload, int processes,
                     const std::function<ProcessReport(int)>& body) {
  std::vector<int> pipes;
  std::vector<pid_t> children;
  void* shared = mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) throw std::runtime_error("mmap failed");
  auto* barrier = new (shared) std::atomic<int>(0);
  const auto start = std::chrono::steady_clock::now();
  for (int index = 0; index < processes; ++index) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      arrived = barrier;
      expected_processes = processes;
      int code = 0;
      try {
        auto report = body(index);
        // Four counters and the window first, then the latencies.
        std::vector<double> message{report.zookeeper_requests,
                                    report.zookeeper_round_trips,
                                    report.retries,
                                    report.slept_ms,
                                    report.started_ms,
                                    report.finished_ms};
        message.insert(message.end(), report.latencies_ms.begin(), report.latencies_ms.end());
        const auto bytes = message.size() * sizeof(double);
        if (write(fds[1], message.data(), bytes) != static_cast<ssize_t>(bytes)) code = 3;
      } catch (const std::exception& error) {
        std::fprintf(stderr, "bench child %d: %s\n", index, error.what());
        code = 1;
      }
      _exit(code);
    }
    close(fds[1]);
    pipes.push_back(fds[0]);
    children.push_back(pid);
  }
  ProcessReport all;
  double earliest_start = 0, latest_end = 0;
  bool windowed = true;  // every child recorded its window
  for (int fd : pipes) {
    double sample;
    int position = 0;
    double started = 0;
    while (read(fd, &sample, sizeof sample) == sizeof sample) {
      switch (position++) {
        case 0: all.zookeeper_requests += sample; break;
        case 1: all.zookeeper_round_trips += sample; break;
        case 2: all.retries += sample; break;
        case 3: all.slept_ms += sample; break;
        case 4: started = sample; break;
        case 5:
          windowed = windowed && started > 0 && sample > 0;
          earliest_start = earliest_start == 0 ? started : std::min(earliest_start, started);
          latest_end = std::max(latest_end, sample);
          break;
        default: all.latencies_ms.push_back(sample);
      }
    }
    close(fd);
  }
  munmap(shared, sizeof(std::atomic<int>));
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      throw std::runtime_error(workload + ": a benchmark process failed");
    }
  }
  const double seconds =
      windowed && latest_end > earliest_start
          ? (latest_end - earliest_start) / 1000
          : std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Result result = summarize(workload, all);
  result.operations_per_second = static_cast<double>(all.latencies_ms.size()) / seconds;
  return result;
}

void print_table(const std::string& title, const std::vector<Result>& results) {
  int width = 52;  // the longest row label's, so the columns stay aligned
  for (const auto& r : results) width = std::max(width, static_cast<int>(r.workload.size()));
  std::printf("\n== %s ==\n", title.c_str());
  std::printf("%-*s %10s %9s %9s %8s %8s %8s %9s  %s\n", width, "workload", "ops/s", "p50 ms",
              "p99 ms", "zk req", "zk rtt", "retries", "x floor", "floor (p50)");
  for (const auto& r : results) {
    char ratio[32] = "-";
    char floor[32] = "";
    if (r.floor_ms > 0) {
      std::snprintf(ratio, sizeof ratio, "%.2f", r.p50_ms / r.floor_ms);
      std::snprintf(floor, sizeof floor, " %.3f ms", r.floor_ms);
    }
    std::printf("%-*s %10.0f %9.3f %9.3f %8.2f %8.2f %8.2f %9s  %s%s\n", width, r.workload.c_str(),
                r.operations_per_second, r.p50_ms, r.p99_ms, r.zookeeper_requests,
                r.zookeeper_round_trips, r.retries, ratio, r.floor_name.c_str(), floor);
  }
  std::fflush(stdout);
  for (const auto& r : results) {
    recorded().push_back({{"table", title},
                          {"workload", r.workload},
                          {"operations_per_second", r.operations_per_second},
                          {"p50_ms", r.p50_ms},
                          {"p99_ms", r.p99_ms},
                          {"zookeeper_requests", r.zookeeper_requests},
                          {"zookeeper_round_trips", r.zookeeper_round_trips},
                          {"retries", r.retries},
                          {"floor_ms", r.floor_ms},
                          {"floor", r.floor_name}});
  }
}

nlohmann::json& recorded() {
  static nlohmann::json rows = nlohmann::json::array();
  return rows;
}

}  // namespace avout::bench
