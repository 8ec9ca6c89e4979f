#pragma once
// The peers that run outside this process: etcd's STM, Mutex and Election (a Go program
// against an etcd the bench starts) and Apache Curator's recipes (Java programs on the bench's
// ZooKeeper). Each is built and run when its tools are installed; when they are not, the
// bench says so in one line and goes on.

#include "workloads.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace avout::bench {

/// One row a peer program measured, with every latency when it was asked for them.
struct PeerRow {
  Result result{};                     ///< the row as the program summarized it
  std::vector<double> latencies_ms{};  ///< each operation's, with -latencies (else empty)
  double client_cpu_ms = 0;            ///< the program's CPU per operation (contended rows; else 0)
  double server_cpu_ms = 0;  ///< its server's CPU per operation, with -server-pid (else 0)
};

class EtcdServer;

/// The etcd peer program (bench/peers/etcd, built for this run) and an etcd of its own on
/// loopback, kept for the whole run so that several workloads can use them.
class EtcdPeer {
 public:
  /// Builds the program and starts etcd; null, after saying so in one line, when the tools
  /// are not installed.
  static std::unique_ptr<EtcdPeer> start();
  /// Stops etcd and removes the program.
  ~EtcdPeer();
  EtcdPeer(const EtcdPeer&) = delete;
  EtcdPeer& operator=(const EtcdPeer&) = delete;

  /// Runs the program against this etcd with `arguments` (its flags); the rows it printed.
  std::vector<PeerRow> run(const std::string& arguments) const;
  /// The pid of this etcd (for the program's -server-pid: its CPU per operation).
  int server_pid() const;

 private:
  EtcdPeer();
  std::string build_dir_;
  std::unique_ptr<EtcdServer> server_;
};

/// etcd 3.4's STM (serializable and the default isolation) and Mutex, on the same workloads
/// as avout's rows, beside etcd's own floor (a Get, a Put) measured in the same program.
void run_etcd_peer(const Settings& settings, const EtcdPeer& peer);

/// Curator's DistributedAtomicLong, InterProcessMutex and InterProcessReadWriteLock on the
/// bench's ZooKeeper.
void run_curator_peer(const Settings& settings, const Servers& servers, const Floors& floors);

/// Curator's InterProcessSemaphoreV2, DistributedQueue, SimpleDistributedQueue and LeaderLatch
/// (bench/peers/curator/CuratorRecipes.java) on the bench's ZooKeeper, every session of
/// `session_timeout`, with `hand_overs` leader hand-overs; the rows (no floor set), or none
/// after saying so in one line when the tools are not installed.
std::vector<PeerRow> run_curator_recipes(const Settings& settings, const Servers& servers,
                                         std::chrono::milliseconds session_timeout, int hand_overs);

}  // namespace avout::bench
