#include "servers.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

namespace avout::testing {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::chrono::milliseconds scaled(std::chrono::milliseconds timeout) {
  const char* scale = std::getenv("AVOUT_TEST_TIMEOUT_SCALE");
  const double factor = scale ? std::atof(scale) : 1.0;
  return std::chrono::milliseconds(
      static_cast<long long>(static_cast<double>(timeout.count()) * (factor > 0 ? factor : 1.0)));
}

namespace {

// The lowest port of the kernel's ephemeral range, from which it picks outgoing connections'
// local ports.
int ephemeral_low() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 32768;
  range >> low;
  return low;
}

bool can_bind(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = loopback_address(port);
  const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  close(fd);
  return bound;
}

// Claims `port` among every process of the machine that uses this fixture (test programs run
// side by side, the bench) until this process ends: the lock's descriptor is never closed, so
// a port stays this process's while its server is stopped for a restart.
bool claim(int port) {
  const char* folder = "/tmp/avout-port-claims";
  mkdir(folder, 01777);
  chmod(folder, 01777);  // whoever created it, every user of the machine may claim
  const std::string path = std::string(folder) + "/" + std::to_string(port);
  const int fd = open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0666);  // any owner's file
  if (fd < 0) return false;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return false;
  }
  return true;
}

}  // namespace

sockaddr_in loopback_address(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

int free_port() {
  // Below the ephemeral range: a port in it, free when checked, can become an outgoing
  // connection's local end before the server binds it (the server then exits on start).
  static std::mutex choosing;
  static std::mt19937 random{std::random_device{}()};
  const std::lock_guard lock(choosing);
  const int low = 10000;
  const int high = std::max(ephemeral_low() - 1, low + 1000);
  std::uniform_int_distribution<int> pick(low, high);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int port = pick(random);
    if (can_bind(port) && claim(port)) return port;
  }
  throw std::runtime_error("free_port: no free port between " + std::to_string(low) + " and " +
                           std::to_string(high));
}

std::string ask_loopback(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval timeout{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_in address = loopback_address(port);
  std::string answer;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    ssize_t got;
    while ((got = recv(fd, buffer, sizeof buffer, 0)) > 0) {
      answer.append(buffer, static_cast<std::size_t>(got));
      if (answer.find('\n') != std::string::npos && request.rfind("PING", 0) == 0) break;
    }
  }
  close(fd);
  return answer;
}

bool redis_answers(int port) { return ask_loopback(port, "PING\r\n").rfind("+PONG", 0) == 0; }

namespace {

std::string make_temp_dir(const char* stem) {
  std::string pattern = std::string("/tmp/avout-") + stem + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

std::string tail_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
}

// The unprivileged user PostgreSQL runs as when the tests run as root.
struct RunAs {
  uid_t uid = 0;
  gid_t gid = 0;
  bool drop = false;
};

RunAs postgres_user() {
  RunAs as;
  if (geteuid() != 0) return as;
  passwd* entry = getpwnam("postgres");
  if (entry == nullptr) throw std::runtime_error("tests run as root but no 'postgres' user exists");
  as = {entry->pw_uid, entry->pw_gid, true};
  return as;
}

// One server process in its own process group, output to a log file.
class Process {
 public:
  Process() = default;
  Process(const std::vector<std::string>& argv, const std::string& log, RunAs as = {}) {
    owner_ = getpid();
    // The kernel sends the parent-death signal when the thread that forked ends, so only a
    // server started by the main thread gets one: a helper thread may end long before the run.
    const bool dies_with_owner = gettid() == owner_;
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      setpgid(0, 0);
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      if (as.drop && (setgid(as.gid) != 0 || setuid(as.uid) != 0)) _exit(126);
      // A test killed by its timeout or a benchmark whose output was cut leaves no server
      // running unowned (its own process group is out of reach of the terminal's signals).
      // Set after the user change, which clears it.
      if (dies_with_owner) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != owner_) _exit(125);  // the owner ended before the line above
      }
      std::vector<char*> args;
      for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
    setpgid(pid_, pid_);
  }
  Process(Process&& other) noexcept : pid_(std::exchange(other.pid_, -1)), owner_(other.owner_) {}
  Process& operator=(Process&& other) noexcept {
    stop(SIGKILL);
    pid_ = std::exchange(other.pid_, -1);
    owner_ = other.owner_;
    return *this;
  }
  ~Process() { stop(SIGKILL); }
  bool running() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  // Signals the whole group and reaps the leader; only the process that started it does.
  void stop(int signal_number, std::chrono::milliseconds grace = 20s) {
    if (pid_ <= 0 || getpid() != owner_) return;
    kill(-pid_, signal_number);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (waitpid(pid_, nullptr, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(-pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(20ms);
    }
    kill(-pid_, SIGKILL);  // stragglers of the group
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  pid_t owner_ = 0;
};

// Waits for `ready`; fails at once, with the server's log, when `server` has exited (a port
// taken, a bad option) instead of polling a dead server until the timeout.
template <typename Ready>
void wait_until(Ready ready, std::chrono::milliseconds timeout, const std::string& what,
                const std::string& log, const Process* server = nullptr) {
  const auto deadline = std::chrono::steady_clock::now() + scaled(timeout);
  while (!ready()) {
    if (server != nullptr && !server->running()) {
      throw std::runtime_error(what + " exited before it was ready; log tail:\n" + tail_of(log));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error(what + " did not become ready; log tail:\n" + tail_of(log));
    }
    std::this_thread::sleep_for(100ms);
  }
}

void remove_dir(const std::string& dir, pid_t owner) {
  if (!dir.empty() && getpid() == owner) {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
}

std::vector<std::string> zookeeper_command(const std::string& config) {
  // ZooKeeper's jar names its own dependencies; slf4j-simple, the one logging binding on the
  // class path, puts its warnings and errors (a port it cannot bind) in the server's log.
  return {"java",
          "-Xmx256m",
          "-XX:+UseSerialGC",
          "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
          "-cp",
          "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar",
          "org.apache.zookeeper.server.quorum.QuorumPeerMain",
          config};
}

std::string zookeeper_mode(int port) {
  const std::string answer = ask_loopback(port, "srvr");
  const auto at = answer.find("Mode: ");
  if (at == std::string::npos) return "";
  return answer.substr(at + 6, answer.find('\n', at) - at - 6);
}

}  // namespace

// ---- ZooKeeper standalone ---------------------------------------------------------------

struct ZooKeeperServer::Impl {
  std::string dir = make_temp_dir("zookeeper");
  int port = free_port();
  pid_t owner = getpid();
  Process process;
  ~Impl() {
    process.stop(SIGTERM);
    remove_dir(dir, owner);
  }
};

ZooKeeperServer::ZooKeeperServer() : impl_(std::make_unique<Impl>()) {
  std::ofstream(impl_->dir + "/zoo.cfg")
      << "tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir=" << impl_->dir
      << "/data\nclientPort=" << impl_->port
      << "\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=*\n"
         "maxSessionTimeout=60000\nmaxClientCnxns=0\n";
  start();
}

ZooKeeperServer::~ZooKeeperServer() = default;

std::string ZooKeeperServer::connect_string() const {
  return "127.0.0.1:" + std::to_string(impl_->port);
}

int ZooKeeperServer::port() const { return impl_->port; }

void ZooKeeperServer::stop() { impl_->process.stop(SIGTERM); }

void ZooKeeperServer::start() {
  const std::string log = impl_->dir + "/server.log";
  impl_->process = Process(zookeeper_command(impl_->dir + "/zoo.cfg"), log);
  wait_until([&] { return ask_loopback(impl_->port, "ruok") == "imok"; }, 60s,
             "zookeeper on port " + std::to_string(impl_->port), log, &impl_->process);
}

// ---- ZooKeeper ensemble -----------------------------------------------------------------

struct ZooKeeperEnsemble::Impl {
  struct Member {
    std::string dir;
    int client_port;
    Process process;
  };
  std::vector<Member> members;
  pid_t owner = getpid();
  ~Impl() {
    for (auto& member : members) {
      member.process.stop(SIGTERM);
      remove_dir(member.dir, owner);
    }
  }
  void launch(std::size_t index) {
    auto& member = members[index];
    member.process =
        Process(zookeeper_command(member.dir + "/zoo.cfg"), member.dir + "/server.log");
  }
};

ZooKeeperEnsemble::ZooKeeperEnsemble(int count) : impl_(std::make_unique<Impl>()) {
  std::string servers;
  for (int i = 0; i < count; ++i) {
    impl_->members.push_back({make_temp_dir("ensemble"), free_port(), {}});
    servers += "server." + std::to_string(i + 1) + "=127.0.0.1:" + std::to_string(free_port()) +
               ":" + std::to_string(free_port()) + "\n";
  }
  for (int i = 0; i < count; ++i) {
    auto& member = impl_->members[static_cast<std::size_t>(i)];
    fs::create_directories(member.dir + "/data");
    std::ofstream(member.dir + "/data/myid") << (i + 1) << "\n";
    std::ofstream(member.dir + "/zoo.cfg")
        << "tickTime=500\ninitLimit=20\nsyncLimit=10\ndataDir=" << member.dir
        << "/data\nclientPort=" << member.client_port
        << "\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=*\n"
           "maxSessionTimeout=60000\nmaxClientCnxns=0\n"
        << servers;
  }
  for (std::size_t i = 0; i < impl_->members.size(); ++i) impl_->launch(i);
  wait_for_quorum();
}

ZooKeeperEnsemble::~ZooKeeperEnsemble() = default;

std::string ZooKeeperEnsemble::connect_string() const {
  std::string hosts;
  for (const auto& member : impl_->members) {
    // Appended piece by piece: GCC 12's -Wrestrict misfires on `"," + std::string(...)`
    // (a char pointer plus a temporary string) in optimized builds.
    if (!hosts.empty()) hosts += ',';
    hosts += "127.0.0.1:";
    hosts += std::to_string(member.client_port);
  }
  return hosts;
}

int ZooKeeperEnsemble::port(int index) const {
  return impl_->members.at(static_cast<std::size_t>(index)).client_port;
}

int ZooKeeperEnsemble::leader() const {
  for (std::size_t i = 0; i < impl_->members.size(); ++i) {
    if (impl_->members[i].process.running() &&
        zookeeper_mode(impl_->members[i].client_port) == "leader") {
      return static_cast<int>(i);
    }
  }
  return -1;
}

void ZooKeeperEnsemble::kill(int index) {
  impl_->members.at(static_cast<std::size_t>(index)).process.stop(SIGKILL);
}

void ZooKeeperEnsemble::restart(int index) {
  impl_->launch(static_cast<std::size_t>(index));
  const int member_port = port(index);
  wait_until(
      [&] {
        const auto mode = zookeeper_mode(member_port);
        return mode == "leader" || mode == "follower";
      },
      60s, "ensemble member " + std::to_string(index),
      impl_->members[static_cast<std::size_t>(index)].dir + "/server.log",
      &impl_->members[static_cast<std::size_t>(index)].process);
}

void ZooKeeperEnsemble::wait_for_quorum() const {
  wait_until(
      [&] {
        if (leader() < 0) return false;
        for (const auto& member : impl_->members) {
          if (!member.process.running()) continue;
          const auto mode = zookeeper_mode(member.client_port);
          if (mode != "leader" && mode != "follower") return false;
        }
        return true;
      },
      90s, "the zookeeper ensemble", impl_->members[0].dir + "/server.log");
}

// ---- Redis ------------------------------------------------------------------------------

struct RedisServer::Impl {
  std::string dir = make_temp_dir("redis");
  int port = free_port();
  bool durable = false;
  pid_t owner = getpid();
  Process process;
  ~Impl() {
    process.stop(SIGTERM);
    remove_dir(dir, owner);
  }
};

RedisServer::RedisServer(bool durable) : impl_(std::make_unique<Impl>()) {
  impl_->durable = durable;
  start();
}

RedisServer::~RedisServer() = default;

std::string RedisServer::url() const { return "redis://127.0.0.1:" + std::to_string(impl_->port); }

std::string RedisServer::socket_path() const { return impl_->dir + "/redis.sock"; }

int RedisServer::port() const { return impl_->port; }

void RedisServer::stop() { impl_->process.stop(SIGTERM); }

void RedisServer::start() {
  const std::string log = impl_->dir + "/server.log";
  // ::1 too where the machine has IPv6 ("-": not fatal when it has not), and a unix socket.
  std::vector<std::string> argv{"redis-server",
                                "--port",
                                std::to_string(impl_->port),
                                "--bind",
                                "127.0.0.1",
                                "-::1",
                                "--unixsocket",
                                socket_path(),
                                "--unixsocketperm",
                                "700",
                                "--save",
                                "",
                                "--dir",
                                impl_->dir,
                                "--daemonize",
                                "no"};
  if (impl_->durable) {
    argv.insert(argv.end(), {"--appendonly", "yes", "--appendfsync", "always"});
  } else {
    argv.insert(argv.end(), {"--appendonly", "no"});
  }
  impl_->process = Process(argv, log);
  wait_until([&] { return redis_answers(impl_->port); }, 30s,
             "redis on port " + std::to_string(impl_->port), log, &impl_->process);
}

// ---- PostgreSQL -------------------------------------------------------------------------

namespace {
const std::string postgres_bin = "/usr/lib/postgresql/15/bin/";

void run_to_end(const std::vector<std::string>& argv, const std::string& log, RunAs as,
                const std::string& what) {
  Process process(argv, log, as);
  // Process::stop would kill it: wait for it to finish by itself instead.
  const auto deadline = std::chrono::steady_clock::now() + scaled(120s);
  while (process.running()) {
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error(what + " did not finish; log tail:\n" + tail_of(log));
    }
    std::this_thread::sleep_for(50ms);
  }
}
}  // namespace

struct PostgresServer::Impl {
  std::string dir = make_temp_dir("postgres");
  int port = free_port();
  RunAs as = postgres_user();
  pid_t owner = getpid();
  Process process;
  ~Impl() {
    process.stop(SIGINT);  // fast shutdown
    remove_dir(dir, owner);
  }
  std::string log() const { return dir + "/server.log"; }
  bool accepting() const {
    return ask_loopback(port, std::string("\0\0\0\x08\x04\xd2\x16\x2f", 8)) ==
           "N";  // SSLRequest: 'N'
  }
};

PostgresServer::PostgresServer() : impl_(std::make_unique<Impl>()) {
  if (impl_->as.drop && chown(impl_->dir.c_str(), impl_->as.uid, impl_->as.gid) != 0) {
    throw std::runtime_error("cannot hand " + impl_->dir + " to the postgres user");
  }
  chmod(impl_->dir.c_str(), 0700);
  const std::string data = impl_->dir + "/data";
  run_to_end({postgres_bin + "initdb", "-D", data, "-A", "trust", "-U", "avout", "--no-sync"},
             impl_->dir + "/initdb.log", impl_->as, "initdb");
  if (!fs::exists(data + "/PG_VERSION")) {
    throw std::runtime_error("initdb failed; log tail:\n" + tail_of(impl_->dir + "/initdb.log"));
  }
  start();
  run_to_end({"psql", "-h", "127.0.0.1", "-p", std::to_string(impl_->port), "-U", "avout", "-d",
              "postgres", "-c", "CREATE DATABASE avout"},
             impl_->dir + "/createdb.log", impl_->as, "CREATE DATABASE");
}

PostgresServer::~PostgresServer() = default;

std::string PostgresServer::url() const {
  return "postgresql://avout@127.0.0.1:" + std::to_string(impl_->port) + "/avout";
}

int PostgresServer::port() const { return impl_->port; }

void PostgresServer::stop() { impl_->process.stop(SIGINT); }

void PostgresServer::start() {
  impl_->process =
      Process({postgres_bin + "postgres", "-D", impl_->dir + "/data", "-p",
               std::to_string(impl_->port), "-k", impl_->dir, "-c", "listen_addresses=127.0.0.1",
               "-c", "fsync=off", "-c", "max_connections=200"},
              impl_->log(), impl_->as);
  wait_until([&] { return impl_->accepting(); }, 60s,
             "postgres on port " + std::to_string(impl_->port), impl_->log(), &impl_->process);
}

// ---- shared per binary --------------------------------------------------------------------

ZooKeeperServer& shared_zookeeper() {
  static ZooKeeperServer server;
  return server;
}

RedisServer& shared_redis() {
  static RedisServer server;
  return server;
}

PostgresServer& shared_postgres() {
  static PostgresServer server;
  return server;
}

}  // namespace avout::testing
