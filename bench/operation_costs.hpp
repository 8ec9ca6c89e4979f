#pragma once
// What a row's operations cost beyond their time, read before and after its window: the
// ZooKeeper requests by kind every session of the process sent (zk/request_tally.hpp), the
// multis that failed, the round trips its clients waited for, the retries by cause (a
// PrometheusMetrics sink the row's clients share: avout_transaction_retries_total), and the
// CPU of the clients (this process, getrusage) and of the server (its /proc/PID/stat); the
// heads read ahead for a retry and what became of them (runtime/prefetch_tally.hpp).

#include "runtime/prefetch_tally.hpp"
#include "zk/request_tally.hpp"

#include <avout/client.hpp>
#include <avout/metrics.hpp>

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace avout::bench {

/// The retry causes avout labels (docs/metrics.md), then "other" for any it adds later.
inline constexpr std::array<std::string_view, 9> retry_causes{
    "conflict",        "commute_conflict", "history_miss",
    "barging_yield",   "confirmation",     "view_changed",
    "session_renewed", "session_expired",  "other"};

/// Counters of one window, or readings at one moment (subtract two for a window). Plain
/// doubles: a child process hands its window to its parent through shared memory.
struct Costs {
  double operations = 0;                              ///< operations of the window
  std::array<double, detail::request_kinds> sent{};   ///< ZooKeeper requests, by kind
  double multis_failed = 0;                           ///< multis answered "not committed"
  double round_trips = 0;                             ///< waits for a ZooKeeper reply
  std::array<double, retry_causes.size()> retries{};  ///< transaction retries, by cause
  double prefetches_used = 0;                         ///< heads read ahead a lookup found
  double prefetches_wasted = 0;                       ///< heads read ahead that went unread
  double client_cpu_ms = 0;                           ///< CPU of this process
  double server_cpu_ms = 0;                           ///< CPU of the server process
  /// Adds every counter of `other` (windows of several processes, or of several rounds).
  Costs& operator+=(const Costs& other);
};

/// The window between two readings (operations stay those of `after`).
Costs operator-(Costs after, const Costs& before);

/// Where a row's costs are read: the clients whose round trips count, the sink their
/// retries go to (null: none counted) and the server's pid (0: its CPU is not read).
struct CostSources {
  std::vector<Client*> clients{};              ///< the row's clients
  const PrometheusMetrics* metrics = nullptr;  ///< the sink the clients share
  int server_pid = 0;                          ///< the ZooKeeper (or etcd) server process
};

/// The counters of `sources` now.
Costs read_costs(const CostSources& sources);

/// CPU time (user + system) the process `pid` has used so far, in ms; 0 when unreadable.
double process_cpu_ms(int pid);

/// The pid of the process on this machine listening on TCP port `port` (IPv4 or IPv6), by
/// its socket's inode in /proc; 0 when none is found (another user's, or not local).
int listening_pid(int port);

/// The port of the first host of a ZooKeeper connect string ("127.0.0.1:2181,.../chroot").
int first_port(const std::string& hosts);

/// Prints one line per row: `costs` per operation (requests by kind, round trips, multis
/// failed, client and server CPU, retries by nonzero cause) under `title`.
void print_costs(const std::string& title, const std::vector<std::pair<std::string, Costs>>& rows);

}  // namespace avout::bench
