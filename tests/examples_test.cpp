// The programs in examples/ against real servers: each one checks its own results, so an
// exit code of 0 means every step did what its comments say. Without its environment
// variables each prints its usage and exits with 2.
#include "support/servers.hpp"

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

using namespace std::chrono_literals;

namespace {

// The environment of this process without any AVOUT_* server variable, plus `extra`.
std::vector<std::string> environment(const std::vector<std::string>& extra) {
  std::vector<std::string> result;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "AVOUT_ZOOKEEPER=", 16) == 0 ||
        std::strncmp(*entry, "AVOUT_REDIS=", 12) == 0 ||
        std::strncmp(*entry, "AVOUT_POSTGRES=", 15) == 0) {
      continue;
    }
    result.emplace_back(*entry);
  }
  result.insert(result.end(), extra.begin(), extra.end());
  return result;
}

// Runs `program` with exactly `env` as its environment; its exit code (128 + signal when
// killed). Kills it and fails the test when it runs longer than `limit`.
int run(const std::string& program, const std::vector<std::string>& env,
        std::chrono::milliseconds limit) {
  std::vector<char*> envp;
  for (const auto& entry : env) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  char* argv[] = {const_cast<char*>(program.c_str()), nullptr};

  std::cout.flush();
  const pid_t pid = fork();
  if (pid < 0) FAIL("fork failed: " << std::strerror(errno));
  if (pid == 0) {
    execve(program.c_str(), argv, envp.data());
    _exit(127);  // only async-signal-safe calls after fork
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done < 0) FAIL("waitpid failed: " << std::strerror(errno));
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL(program << " still ran after " << limit.count() << " ms: killed");
    }
    std::this_thread::sleep_for(20ms);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct Example {
  std::string name;
  std::string path;
};

const Example examples[] = {
    {"atoms", AVOUT_EXAMPLE_ATOMS},
    {"refs", AVOUT_EXAMPLE_REFS},
    {"agents", AVOUT_EXAMPLE_AGENTS},
};

}  // namespace

TEST_CASE("every example prints its usage and exits with 2 without server addresses") {
  for (const auto& example : examples) {
    INFO("example " << example.name << " (" << example.path << ")");
    CHECK(run(example.path, environment({}), avout::testing::scaled(30s)) == 2);
  }
}

TEST_CASE("every example runs against real ZooKeeper, Redis and PostgreSQL and checks itself") {
  const auto env = environment({
      "AVOUT_ZOOKEEPER=" + avout::testing::shared_zookeeper().connect_string(),
      "AVOUT_REDIS=" + avout::testing::shared_redis().url(),
      "AVOUT_POSTGRES=" + avout::testing::shared_postgres().url(),
  });
  for (const auto& example : examples) {
    INFO("example " << example.name << " (" << example.path << ")");
    CHECK(run(example.path, env, avout::testing::scaled(120s)) == 0);
  }
}
