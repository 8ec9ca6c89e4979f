#include "operation_costs.hpp"

#include "support/prometheus_text.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

namespace avout::bench {

namespace {

double ms(const timeval& time) {
  return static_cast<double>(time.tv_sec) * 1000 + static_cast<double>(time.tv_usec) / 1000;
}

// The retries by cause the sink counted so far.
std::array<double, retry_causes.size()> retries_by_cause(const PrometheusMetrics& metrics) {
  std::array<double, retry_causes.size()> by_cause{};
  for (const auto& sample : testing::parse_prometheus(metrics.render()).samples) {
    if (sample.name != "avout_transaction_retries_total") continue;
    const auto label = sample.labels.find("cause");
    const std::string cause = label == sample.labels.end() ? "other" : label->second;
    // A cause this list does not know yet counts as the last, "other".
    const auto known = std::find(retry_causes.begin(), retry_causes.end() - 1, cause);
    by_cause[static_cast<std::size_t>(known - retry_causes.begin())] += sample.value;
  }
  return by_cause;
}

// The inodes of the sockets listening on `port` in one of /proc/net/tcp and tcp6.
std::vector<std::string> listening_inodes(int port, const std::string& table) {
  std::vector<std::string> inodes;
  std::ifstream lines(table);
  std::string line;
  std::getline(lines, line);  // the header
  char wanted[16];
  std::snprintf(wanted, sizeof wanted, "%04X", port);
  while (std::getline(lines, line)) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
        timeout >> inode;
    const auto colon = local.rfind(':');
    if (state == "0A" && colon != std::string::npos && local.substr(colon + 1) == wanted)
      inodes.push_back(inode);
  }
  return inodes;
}

}  // namespace

Costs& Costs::operator+=(const Costs& other) {
  operations += other.operations;
  for (std::size_t i = 0; i < sent.size(); ++i) sent[i] += other.sent[i];
  multis_failed += other.multis_failed;
  round_trips += other.round_trips;
  for (std::size_t i = 0; i < retries.size(); ++i) retries[i] += other.retries[i];
  prefetches_used += other.prefetches_used;
  prefetches_wasted += other.prefetches_wasted;
  client_cpu_ms += other.client_cpu_ms;
  server_cpu_ms += other.server_cpu_ms;
  return *this;
}

Costs operator-(Costs after, const Costs& before) {
  for (std::size_t i = 0; i < after.sent.size(); ++i) after.sent[i] -= before.sent[i];
  after.multis_failed -= before.multis_failed;
  after.round_trips -= before.round_trips;
  for (std::size_t i = 0; i < after.retries.size(); ++i) after.retries[i] -= before.retries[i];
  after.prefetches_used -= before.prefetches_used;
  after.prefetches_wasted -= before.prefetches_wasted;
  after.client_cpu_ms -= before.client_cpu_ms;
  after.server_cpu_ms -= before.server_cpu_ms;
  return after;
}

Costs read_costs(const CostSources& sources) {
  Costs now;
  const auto tally = detail::request_tally();
  for (std::size_t i = 0; i < now.sent.size(); ++i)
    now.sent[i] = static_cast<double>(tally.sent[i]);
  now.multis_failed = static_cast<double>(tally.multis_failed);
  for (Client* client : sources.clients)
    now.round_trips += static_cast<double>(client->session().statistics().round_trips);
  if (sources.metrics != nullptr) now.retries = retries_by_cause(*sources.metrics);
  const auto prefetches = detail::prefetch_tally();
  now.prefetches_used = static_cast<double>(prefetches.used);
  now.prefetches_wasted = static_cast<double>(prefetches.wasted);
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  now.client_cpu_ms = ms(self.ru_utime) + ms(self.ru_stime);
  now.server_cpu_ms = process_cpu_ms(sources.server_pid);
  return now;
}

double process_cpu_ms(int pid) {
  if (pid <= 0) return 0;
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  // "pid (comm) state ppid ...": utime and stime are fields 14 and 15, the 12th and 13th
  // after the command's closing parenthesis (the command may hold spaces).
  const auto end_of_command = stat.rfind(')');
  if (end_of_command == std::string::npos) return 0;
  std::istringstream fields(stat.substr(end_of_command + 1));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);
  }
  return ticks * 1000 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int listening_pid(int port) {
  std::vector<std::string> sockets;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    for (const auto& inode : listening_inodes(port, table))
      sockets.push_back("socket:[" + inode + "]");
  }
  if (sockets.empty()) return 0;
  DIR* processes = opendir("/proc");
  if (processes == nullptr) return 0;
  int found = 0;
  while (const dirent* process = readdir(processes)) {
    const std::string pid = process->d_name;
    if (found != 0 || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string folder = "/proc/" + pid + "/fd";
    DIR* descriptors = opendir(folder.c_str());
    if (descriptors == nullptr) continue;  // another user's
    while (const dirent* descriptor = readdir(descriptors)) {
      char target[64] = {};
      const std::string link = folder + "/" + descriptor->d_name;
      if (readlink(link.c_str(), target, sizeof target - 1) <= 0) continue;
      if (std::find(sockets.begin(), sockets.end(), target) != sockets.end()) {
        found = std::stoi(pid);
        break;
      }
    }
    closedir(descriptors);
  }
  closedir(processes);
  return found;
}

int first_port(const std::string& hosts) {
  const std::string first = hosts.substr(0, hosts.find_first_of(",/"));
  const auto colon = first.rfind(':');
  return colon == std::string::npos ? 2181 : std::stoi(first.substr(colon + 1));
}

void print_costs(const std::string& title, const std::vector<std::pair<std::string, Costs>>& rows) {
  int width = 44;  // the longest row name's, so the columns stay aligned
  for (const auto& row : rows) width = std::max(width, static_cast<int>(row.first.size()));
  std::printf("\n== %s ==\n%-*s", title.c_str(), width, "row");
  for (const auto& kind : detail::request_kind_names)
    std::printf(" %8.*s", static_cast<int>(kind.size()), kind.data());
  std::printf(" %7s %10s %9s %9s  %s\n", "zk rtt", "multi fail", "client ms", "server ms",
              "retries by cause; prefetches used/wasted");
  for (const auto& [name, costs] : rows) {
    const double n = std::max(1.0, costs.operations);
    std::printf("%-*s", width, name.c_str());
    // A peer's row (etcd) has no ZooKeeper requests: dashes, not zeros.
    const bool zookeeper =
        std::any_of(costs.sent.begin(), costs.sent.end(), [](double sent) { return sent > 0; });
    for (const double sent : costs.sent) {
      if (zookeeper) {
        std::printf(" %8.2f", sent / n);
      } else {
        std::printf(" %8s", "-");
      }
    }
    if (zookeeper) {
      std::printf(" %7.2f %10.2f", costs.round_trips / n, costs.multis_failed / n);
    } else {
      std::printf(" %7s %10s", "-", "-");
    }
    std::printf(" %9.3f %9.3f ", costs.client_cpu_ms / n, costs.server_cpu_ms / n);
    for (std::size_t i = 0; i < retry_causes.size(); ++i) {
      if (costs.retries[i] > 0)
        std::printf(" %.*s %.2f", static_cast<int>(retry_causes[i].size()), retry_causes[i].data(),
                    costs.retries[i] / n);
    }
    if (costs.prefetches_used + costs.prefetches_wasted > 0)
      std::printf("; prefetches %.2f/%.2f", costs.prefetches_used / n, costs.prefetches_wasted / n);
    std::printf("\n");
  }
  std::fflush(stdout);
}

}  // namespace avout::bench
