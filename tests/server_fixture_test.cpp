// The real-server fixture itself: a server it starts never outlives the process that
// started it, so a test killed by its timeout (or a benchmark whose output was cut short)
// leaves nothing running that later tests and measurements would share the machine with; its
// ports lie where no outgoing connection takes them, and a server that cannot start says why
// at once.
#include "support/processes.hpp"
#include "support/servers.hpp"

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

using namespace std::chrono_literals;

TEST_CASE("a server started by a process that is then killed stops with it") {
  int pipe_ends[2];
  REQUIRE(pipe(pipe_ends) == 0);
  struct Started {
    int port = 0;
    char folder[512] = {};  // the server's, which its destructor would have removed
  };
  avout::testing::ChildProcess owner(0, [&](int) {
    close(pipe_ends[0]);
    avout::testing::RedisServer server;
    Started started{server.port(), {}};
    const auto folder = std::filesystem::path(server.socket_path()).parent_path().string();
    folder.copy(started.folder, sizeof started.folder - 1);
    if (write(pipe_ends[1], &started, sizeof started) != static_cast<ssize_t>(sizeof started))
      return;
    for (;;) pause();  // until killed: the server's destructor never runs
  });
  close(pipe_ends[1]);
  Started started;
  const auto got = read(pipe_ends[0], &started, sizeof started);
  close(pipe_ends[0]);
  REQUIRE(got == static_cast<ssize_t>(sizeof started));
  const int port = started.port;
  REQUIRE(avout::testing::redis_answers(port));

  owner.signal(SIGKILL);
  CHECK(owner.wait(10s) == 128 + SIGKILL);
  const auto deadline = std::chrono::steady_clock::now() + avout::testing::scaled(10s);
  while (avout::testing::redis_answers(port) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  CHECK_MESSAGE(!avout::testing::redis_answers(port),
                "the Redis server of a killed owner still answers on port " << port);
  std::error_code ignored;
  std::filesystem::remove_all(started.folder, ignored);
}

namespace {

// Takes 127.0.0.1:`port` from a server: listens on it (past the TIME_WAIT its stopped server's
// connections left there) and never accepts.
class HeldPort {
 public:
  explicit HeldPort(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    const int reuse = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof reuse);
    sockaddr_in address = avout::testing::loopback_address(port);
    held_ = bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
            listen(fd_, 8) == 0;
  }
  ~HeldPort() { close(fd_); }
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;
  bool held() const { return held_; }

 private:
  int fd_;
  bool held_ = false;
};

}  // namespace

TEST_CASE("free ports lie below the ephemeral range, where no outgoing connection takes them") {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int ephemeral_low = 0;
  range >> ephemeral_low;
  REQUIRE(ephemeral_low > 11000);  // a range this fixture can stay below
  std::set<int> ports;
  for (int i = 0; i < 50; ++i) {
    const int port = avout::testing::free_port();
    CHECK_MESSAGE(port < ephemeral_low, "port " << port << " is in the ephemeral range");
    ports.insert(port);
  }
  CHECK(ports.size() == 50);  // each claimed: never handed out twice
}

TEST_CASE("a server whose port was taken while it was stopped fails at once, saying why") {
  avout::testing::ZooKeeperServer server;
  server.stop();
  HeldPort taken(server.port());
  REQUIRE(taken.held());
  const auto started = std::chrono::steady_clock::now();
  std::string error;
  try {
    server.start();
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  const auto waited = std::chrono::steady_clock::now() - started;
  CHECK_MESSAGE(error.find("Address already in use") != std::string::npos, "error: " << error);
  CHECK_MESSAGE(waited < avout::testing::scaled(30s),
                "failed only after "
                    << std::chrono::duration_cast<std::chrono::seconds>(waited).count() << " s");
}
