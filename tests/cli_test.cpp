// The `avout` command line against real servers: listing, showing, setting, gc, the bank
// demo, and exit codes scripts can rely on.
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "support/servers.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <random>

using namespace std::chrono_literals;

namespace {

struct Run {
  int code = -1;
  std::string output;
};

// Runs the tool with `arguments` (already shell-quoted where needed); stdout and stderr.
Run avout_tool(const std::string& arguments) {
  const std::string command = std::string(AVOUT_TOOL_PATH) + " " + arguments + " 2>&1";
  Run run;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) run.output += buffer.data();
  const int status = pclose(pipe);
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

std::string unique_root() {
  static std::mt19937_64 random{std::random_device{}()};
  return "/cli-" + std::to_string(random() % 1000000000);
}

}  // namespace

TEST_CASE("avout lists, shows and sets what clients made, with scriptable exit codes") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string redis_url = avout::testing::shared_redis().url();
  const std::string root = unique_root();
  const std::string connect = "--zookeeper " + zookeeper + " --root " + root + " --redis " + redis_url;
  {
    avout::Client client(avout::ClientOptions{.hosts = zookeeper, .root = root});
    avout::redis::Store redis(redis_url);
    auto ref = client.ref<long>("/accounts/a", 100, redis);
    client.dosync([&] { ref.alter([](long v) { return v + 5; }); });
    (void)client.atom<std::string>("/greeting", "hello");
    auto agent = client.agent<long>("/jobs", 7);
    (void)agent;
  }
  auto refs = avout_tool(connect + " list refs");
  CHECK(refs.code == 0);
  CHECK(refs.output.find("/accounts/a") != std::string::npos);
  auto atoms = avout_tool(connect + " list atoms");
  CHECK(atoms.output.find("/greeting") != std::string::npos);
  CHECK(avout_tool(connect + " list agents").output.find("/jobs") != std::string::npos);

  auto shown = avout_tool(connect + " show ref /accounts/a --store redis");
  CHECK(shown.code == 0);
  CHECK(shown.output.find("105") != std::string::npos);
  CHECK(shown.output.find("history") != std::string::npos);
  CHECK(avout_tool(connect + " show atom /greeting").output.find("hello") != std::string::npos);
  CHECK(avout_tool(connect + " show agent /jobs").output.find("7") != std::string::npos);

  CHECK(avout_tool(connect + " set atom /counter 42 --type long").code == 0);
  {
    avout::Client client(avout::ClientOptions{.hosts = zookeeper, .root = root});
    CHECK(client.atom<long>("/counter", 0).deref() == 42);
  }
  CHECK(avout_tool(connect + " set atom /counter forty-two --type long").code == 2);
  CHECK(avout_tool(connect + " show ref /missing").code == 3);
  CHECK(avout_tool(connect + " show ref relative").code == 2);
  CHECK(avout_tool(connect + " frobnicate").code == 2);
  CHECK(avout_tool("").code == 2);
  CHECK(avout_tool("--help").code == 0);
  CHECK(avout_tool("--zookeeper 127.0.0.1:1 list refs").code == 1);

  {
    avout::Client client(avout::ClientOptions{.hosts = zookeeper, .root = root});
    auto lock = client.lock("/jobs/nightly");
    std::scoped_lock held(lock);
    CHECK(avout_tool(connect + " list locks").output.find("/jobs/nightly") != std::string::npos);
    auto shown_lock = avout_tool(connect + " show lock /jobs/nightly");
    CHECK(shown_lock.code == 0);
    CHECK(shown_lock.output.find("holder") != std::string::npos);
  }
  CHECK(avout_tool(connect + " show lock /jobs/nightly").output.find("free") != std::string::npos);
  CHECK(avout_tool(connect + " show lock /no/such/lock").code == 3);

  auto swept = avout_tool(connect + " gc");
  CHECK(swept.code == 0);
  CHECK(swept.output.find("values erased") != std::string::npos);
}

TEST_CASE("avout bank keeps the total while processes transfer across stores") {
  const std::string arguments =
      "--zookeeper " + avout::testing::shared_zookeeper().connect_string() + " --root " +
      unique_root() + " --redis " + avout::testing::shared_redis().url() + " --postgres " +
      avout::testing::shared_postgres().url() + " bank --processes 3 --accounts 9 --seconds 3";
  auto run = avout_tool(arguments);
  INFO(run.output);
  CHECK(run.code == 0);
  CHECK(run.output.find("total 9000") != std::string::npos);
  CHECK(run.output.find("WRONG") == std::string::npos);
}
