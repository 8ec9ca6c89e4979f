#pragma once
// Real servers for the tests: ZooKeeper (standalone and a 3-server ensemble), Redis and
// PostgreSQL, each started on a free loopback port in a temporary directory and stopped (its
// whole process group) when the object dies, also when a test fails. One started by the main
// thread also stops (SIGTERM) when the process that started it ends without destroying it:
// killed by a timeout or a signal. A server that cannot be started throws
// std::runtime_error: tests never skip silently.

#include <netinet/in.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace avout::testing {

/// Multiplies a test timeout by AVOUT_TEST_TIMEOUT_SCALE (default 1; sanitizer builds raise it).
std::chrono::milliseconds scaled(std::chrono::milliseconds timeout);

/// A TCP port on 127.0.0.1 that nothing holds, below the kernel's ephemeral range (where no
/// outgoing connection can take it), claimed for the rest of this process's life against every
/// other process using this fixture, so a server stopped for a restart gets it back.
int free_port();

/// The IPv4 loopback address 127.0.0.1:`port`.
sockaddr_in loopback_address(int port);

/// Sends `request` to 127.0.0.1:`port` and returns what comes back before the server closes
/// (at most a second's wait; a PING's first line); empty when nothing listens.
std::string ask_loopback(int port, const std::string& request);

/// True when a Redis server answers PING on 127.0.0.1:`port`.
bool redis_answers(int port);

/// One standalone ZooKeeper server.
class ZooKeeperServer {
 public:
  /// Starts the server and waits until it answers `ruok`.
  ZooKeeperServer();
  /// Stops the server and removes its directory.
  ~ZooKeeperServer();
  ZooKeeperServer(const ZooKeeperServer&) = delete;
  ZooKeeperServer& operator=(const ZooKeeperServer&) = delete;
  /// "127.0.0.1:<port>".
  std::string connect_string() const;
  /// The client port.
  int port() const;
  /// Stops the server with SIGTERM and waits for the process to end.
  void stop();
  /// Starts it again on the same port and data directory; waits until it answers.
  void start();
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// A 3-server ZooKeeper ensemble on one machine.
class ZooKeeperEnsemble {
 public:
  /// Starts all members and waits until a leader is elected.
  explicit ZooKeeperEnsemble(int members = 3);
  ~ZooKeeperEnsemble();
  ZooKeeperEnsemble(const ZooKeeperEnsemble&) = delete;
  ZooKeeperEnsemble& operator=(const ZooKeeperEnsemble&) = delete;
  /// "127.0.0.1:<p1>,127.0.0.1:<p2>,127.0.0.1:<p3>".
  std::string connect_string() const;
  /// The client port of member `index` (0-based).
  int port(int index) const;
  /// The index of the current leader (asks each live member with `srvr`); -1 when none.
  int leader() const;
  /// Kills member `index` with SIGKILL.
  void kill(int index);
  /// Restarts member `index` and waits until it serves again.
  void restart(int index);
  /// Waits until the live members have a leader again.
  void wait_for_quorum() const;
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// One redis-server.
class RedisServer {
 public:
  /// Starts redis-server (appendonly with fsync always when `durable`) and waits for PING.
  explicit RedisServer(bool durable = false);
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  /// "redis://127.0.0.1:<port>" (it also listens on [::1] where the machine has IPv6).
  std::string url() const;
  /// The port.
  int port() const;
  /// The path of its unix socket.
  std::string socket_path() const;
  /// Stops the server (SIGTERM) and waits for the process to end.
  void stop();
  /// Starts it again on the same port and directory.
  void start();
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// One PostgreSQL cluster (initdb + postgres, run as the unprivileged `postgres` user when
/// the tests run as root).
class PostgresServer {
 public:
  /// Creates the cluster and a database, starts the server and waits until it accepts.
  PostgresServer();
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;
  /// "postgresql://<user>@127.0.0.1:<port>/<database>".
  std::string url() const;
  /// The port.
  int port() const;
  /// Stops the server (fast shutdown) and waits for it to end.
  void stop();
  /// Starts it again on the same port and data directory.
  void start();
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Servers shared by all tests of one binary, started on first use, stopped at exit.
ZooKeeperServer& shared_zookeeper();
/// See shared_zookeeper.
RedisServer& shared_redis();
/// See shared_zookeeper.
PostgresServer& shared_postgres();

}  // namespace avout::testing
