// The programs in examples/ against real servers: each one checks its own results, so an
// exit code of 0 means every step did what its comments say. Without its environment
// variables each prints its usage and exits with 2.
#include "support/prometheus_text.hpp"
#include "support/servers.hpp"

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <optional>
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

// Starts `program` with `args` and exactly `env` as its environment; its process id.
pid_t spawn(const std::string& program, const std::vector<std::string>& args,
            const std::vector<std::string>& env) {
  std::vector<char*> envp;
  for (const auto& entry : env) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  std::vector<char*> argv{const_cast<char*>(program.c_str())};
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);

  std::cout.flush();
  const pid_t pid = fork();
  if (pid < 0) FAIL("fork failed: " << std::strerror(errno));
  if (pid == 0) {
    execve(program.c_str(), argv.data(), envp.data());
    _exit(127);  // only async-signal-safe calls after fork
  }
  return pid;
}

// Runs `program` with exactly `env` as its environment; its exit code (128 + signal when
// killed). Kills it and fails the test when it runs longer than `limit`.
int run(const std::string& program, const std::vector<std::string>& env,
        std::chrono::milliseconds limit, const std::vector<std::string>& args = {}) {
  const pid_t pid = spawn(program, args, env);
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

namespace {

// The metrics server's answer to GET `target` (status line, headers and body); empty while
// nothing listens on `port`.
std::string http_get(int port, const std::string& target) {
  return avout::testing::ask_loopback(
      port, "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
}

// The body of an HTTP answer.
std::string body_of(const std::string& answer) {
  const auto end = answer.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : answer.substr(end + 4);
}

}  // namespace

TEST_CASE("the metrics server prints its usage and exits with 2 without a port") {
  const auto env =
      environment({"AVOUT_ZOOKEEPER=" + avout::testing::shared_zookeeper().connect_string()});
  CHECK(run(AVOUT_EXAMPLE_METRICS_SERVER, env, avout::testing::scaled(30s)) == 2);
}

TEST_CASE("the metrics server serves its client's metrics over HTTP for Prometheus") {
  const int port = avout::testing::free_port();
  const pid_t pid = spawn(
      AVOUT_EXAMPLE_METRICS_SERVER, {std::to_string(port)},
      environment({"AVOUT_ZOOKEEPER=" + avout::testing::shared_zookeeper().connect_string()}));
  // Asked until its background work has committed something (or the time is up).
  std::string answer;
  std::optional<double> commits;
  const auto until = std::chrono::steady_clock::now() + avout::testing::scaled(60s);
  while (std::chrono::steady_clock::now() < until) {
    answer = http_get(port, "/metrics");
    if (!answer.empty()) {
      commits = avout::testing::parse_prometheus(body_of(answer)).value("avout_commits_total");
      if (commits.value_or(0) > 0) break;
    }
    std::this_thread::sleep_for(100ms);
  }
  const std::string missing = http_get(port, "/elsewhere");
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // SIGTERM stops it cleanly

  INFO("answer: " << answer);
  CHECK(answer.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(answer.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n") !=
        std::string::npos);
  CHECK(body_of(answer).find("avout_commits_total") != std::string::npos);
  CHECK(commits.value_or(0) > 0);
  CHECK(missing.rfind("HTTP/1.1 404", 0) == 0);
}
