#include "external_peers.hpp"

#include "support/processes.hpp"
#include "support/servers.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#ifndef AVOUT_BENCH_PEERS_DIR
#error "AVOUT_BENCH_PEERS_DIR names bench/peers (set by bench/CMakeLists.txt)"
#endif

namespace avout::bench {

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// The full path of `program` on PATH, or empty.
std::string find_program(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream folders(path ? path : "/usr/bin:/bin");
  for (std::string folder; std::getline(folders, folder, ':');) {
    const fs::path candidate = fs::path(folder) / program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return {};
}

// Runs `command` in a shell; returns its standard output, or throws with `what` and the
// output when it fails.
std::string run_capturing(const std::string& command, const std::string& what) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error(what + ": cannot run " + command);
  std::string output;
  char buffer[4096];
  for (std::size_t got; (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    output.append(buffer, got);
  if (pclose(pipe) != 0) throw std::runtime_error(what + " failed: " + command + "\n" + output);
  return output;
}

std::string make_temp_dir(const std::string& stem) {
  std::string pattern = (fs::temp_directory_path() / ("avout-bench-" + stem + "-XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
  return pattern;
}

// True when etcd on `port` answers its health check with healthy.
bool etcd_healthy(int port) {
  return testing::ask_loopback(port, "GET /health HTTP/1.0\r\n\r\n").find("\"health\":\"true\"") !=
         std::string::npos;
}

}  // namespace

// One etcd on free loopback ports, its data in a temporary folder removed when it stops.
class EtcdServer {
 public:
  explicit EtcdServer(const std::string& etcd)
      : dir_(make_temp_dir("etcd")),
        port_(testing::free_port()),
        peer_port_(testing::free_port()),
        process_(0, [&](int) {
          const std::string client = "http://127.0.0.1:" + std::to_string(port_);
          const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port_);
          const int log = open((dir_ + "/etcd.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
          dup2(log, 1);
          dup2(log, 2);
          execl(etcd.c_str(), "etcd", "--name", "bench", "--data-dir", (dir_ + "/data").c_str(),
                "--listen-client-urls", client.c_str(), "--advertise-client-urls", client.c_str(),
                "--listen-peer-urls", peer.c_str(), "--initial-advertise-peer-urls", peer.c_str(),
                "--initial-cluster", ("bench=" + peer).c_str(), static_cast<char*>(nullptr));
          throw std::runtime_error("cannot run " + etcd);
        }) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!etcd_healthy(port_)) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("etcd on port " + std::to_string(port_) +
                                 " did not become healthy; see " + dir_ + "/etcd.log");
      }
      std::this_thread::sleep_for(100ms);
    }
  }
  ~EtcdServer() {
    process_.signal(SIGTERM);
    try {
      process_.wait(20s);
    } catch (const std::exception&) {  // killed by wait after the timeout
    }
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  EtcdServer(const EtcdServer&) = delete;
  EtcdServer& operator=(const EtcdServer&) = delete;
  /// "127.0.0.1:<client port>".
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  /// The etcd process's pid.
  int pid() const { return process_.pid(); }

 private:
  std::string dir_;
  int port_;
  int peer_port_;
  testing::ChildProcess process_;
};

namespace {

// Rows of a peer program's JSON ({"rows": [...]}), each compared with `floor`.
std::vector<PeerRow> parse_rows(const std::string& output, double floor_ms,
                                const std::string& floor_name) {
  std::vector<PeerRow> parsed;
  const auto document = nlohmann::json::parse(output.substr(output.find('{')));
  for (const auto& row : document.at("rows")) {
    PeerRow peer;
    Result& result = peer.result;
    result.workload = row.at("workload");
    result.p50_ms = row.at("p50_ms");
    result.p99_ms = row.at("p99_ms");
    result.operations_per_second = row.at("operations_per_second");
    result.retries = row.at("retries");
    result.floor_ms = floor_ms;
    result.floor_name = floor_name;
    peer.client_cpu_ms = row.value("client_cpu_ms", 0.0);
    peer.server_cpu_ms = row.value("server_cpu_ms", 0.0);
    if (row.contains("latencies_ms"))
      peer.latencies_ms = row.at("latencies_ms").get<std::vector<double>>();
    parsed.push_back(std::move(peer));
  }
  return parsed;
}

std::vector<Result> results_of(const std::vector<PeerRow>& rows) {
  std::vector<Result> results;
  for (const auto& row : rows) results.push_back(row.result);
  return results;
}

}  // namespace

std::unique_ptr<EtcdPeer> EtcdPeer::start() {
  const std::string etcd = find_program("etcd"), go = find_program("go");
  const fs::path source = fs::path(AVOUT_BENCH_PEERS_DIR) / "etcd" / "main.go";
  if (etcd.empty() || go.empty() || !fs::exists("/usr/share/gocode/src/go.etcd.io/etcd/clientv3")) {
    std::printf(
        "\n(etcd peer skipped: needs etcd, go and Debian's golang-etcd-server-dev; "
        "scripts/setup --bench installs them)\n");
    return nullptr;
  }
  std::unique_ptr<EtcdPeer> peer(new EtcdPeer);
  peer->build_dir_ = make_temp_dir("etcd-peer");
  // GOPATH mode against Debian's packaged sources: no module download, no network.
  run_capturing("cd '" + peer->build_dir_ +
                    "' && GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS= '" + go +
                    "' build -o '" + peer->build_dir_ + "/etcd-peer' '" + source.string() + "' '" +
                    (source.parent_path() / "recipes.go").string() + "' 2>&1",
                "building the etcd peer");
  peer->server_ = std::make_unique<EtcdServer>(etcd);
  return peer;
}

EtcdPeer::EtcdPeer() = default;

EtcdPeer::~EtcdPeer() {
  server_.reset();
  std::error_code ignored;
  if (!build_dir_.empty()) fs::remove_all(build_dir_, ignored);
}

std::vector<PeerRow> EtcdPeer::run(const std::string& arguments) const {
  const std::string output = run_capturing(
      "'" + build_dir_ + "/etcd-peer' -endpoint " + server_->endpoint() + " " + arguments,
      "the etcd peer");
  return parse_rows(output, 0, "");
}

int EtcdPeer::server_pid() const { return server_->pid(); }

void run_etcd_peer(const Settings& settings, const EtcdPeer& peer) {
  auto rows = results_of(peer.run("-iterations " + std::to_string(settings.iterations(500)) +
                                  " -warmup " + std::to_string(settings.warm_up().count()) + "ms"));
  double floor = 0;
  for (const auto& row : rows) {
    if (row.workload == "etcd get + put") floor = row.p50_ms;
  }
  for (auto& row : rows) {
    if (row.workload.rfind("etcd ", 0) == 0) continue;  // the floor rows themselves
    row.floor_ms = floor;
    row.floor_name = "etcd get+put";
  }
  print_table("peers: etcd 3.4 STM and Mutex (its own server on loopback, this run)", rows);
}

namespace {

// Compiles the Curator peer (bench/peers/curator) and runs `main_class` with `arguments`; its
// standard output, or nullopt after saying so in one line when the tools are not installed.
std::optional<std::string> run_curator(const std::string& main_class,
                                       const std::string& arguments) {
  const std::string javac = find_program("javac"), java = find_program("java");
  const fs::path jars = "/usr/share/java";
  if (javac.empty() || java.empty() || !fs::exists(jars / "curator-recipes.jar")) {
    std::printf(
        "\n(Curator peer skipped: needs javac and Debian's libcurator-recipes-java; "
        "scripts/setup --bench installs them)\n");
    return std::nullopt;
  }
  std::string classpath;
  for (const char* jar : {"curator-recipes", "curator-framework", "curator-client", "zookeeper",
                          "zookeeper-jute", "guava", "failureaccess", "slf4j-api", "slf4j-nop"}) {
    const fs::path file = jars / (std::string(jar) + ".jar");
    if (fs::exists(file)) classpath += file.string() + ":";
  }
  const std::string build = make_temp_dir("curator-peer");
  const fs::path sources = fs::path(AVOUT_BENCH_PEERS_DIR) / "curator";
  run_capturing("'" + javac + "' -nowarn -d '" + build + "' -cp '" + classpath + "' '" +
                    (sources / "CuratorPeer.java").string() + "' '" +
                    (sources / "CuratorRecipes.java").string() + "' 2>&1",
                "compiling the Curator peer");
  const std::string output = run_capturing(
      "'" + java + "' -cp '" + build + ":" + classpath + "' " + main_class + " " + arguments,
      "the Curator peer");
  fs::remove_all(build);
  return output;
}

}  // namespace

void run_curator_peer(const Settings& settings, const Servers& servers, const Floors& floors) {
  const auto output = run_curator(
      "CuratorPeer", servers.zookeeper + " " + std::to_string(settings.iterations(500)) + " " +
                         std::to_string(settings.warm_up().count()));
  if (!output) return;
  print_table("peers: Apache Curator recipes on the same ZooKeeper",
              results_of(parse_rows(*output, floors.zookeeper_get_set, "zookeeper get+set")));
}

std::vector<PeerRow> run_curator_recipes(const Settings& settings, const Servers& servers,
                                         std::chrono::milliseconds session_timeout,
                                         int hand_overs) {
  const auto output =
      run_curator("CuratorRecipes",
                  servers.zookeeper + " " + std::to_string(settings.iterations(500)) + " " +
                      std::to_string(settings.warm_up().count()) + " " +
                      std::to_string(session_timeout.count()) + " " + std::to_string(hand_overs));
  if (!output) return {};
  return parse_rows(*output, 0, "");
}

}  // namespace avout::bench
