// The real-server fixture itself: a server it starts never outlives the process that
// started it, so a test killed by its timeout (or a benchmark whose output was cut short)
// leaves nothing running that later tests and measurements would share the machine with.
#include "support/processes.hpp"
#include "support/servers.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <csignal>
#include <filesystem>
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
    if (write(pipe_ends[1], &started, sizeof started) != static_cast<ssize_t>(sizeof started)) return;
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
