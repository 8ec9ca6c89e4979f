// The `avout` command line against real servers: listing, showing, setting, watching,
// deleting, running under a lock, gc, the bank demo, and exit codes scripts can rely on.
#include <avout/avout.hpp>
#include <avout/inspect.hpp>
#include <avout/json.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <random>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;

namespace {

struct Run {
  int code = -1;
  std::string output;
};

// Runs the tool with `arguments` (already shell-quoted where needed), with the variable
// assignments `environment` ("NAME=value ...") in its environment; stdout and stderr.
Run avout_tool(const std::string& arguments, const std::string& environment = "") {
  const std::string command =
      environment + " " + std::string(AVOUT_TOOL_PATH) + " " + arguments + " 2>&1";
  Run run;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) run.output += buffer.data();
  const int status = pclose(pipe);
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

// A tool run in the background whose output is read line by line (stdout and stderr).
class Background {
 public:
  explicit Background(const std::string& arguments) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(fds[1], 1);
      dup2(fds[1], 2);
      close(fds[0]);
      close(fds[1]);
      const std::string command = std::string("exec ") + AVOUT_TOOL_PATH + " " + arguments;
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    output_ = fdopen(fds[0], "r");
  }
  ~Background() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (output_ != nullptr) fclose(output_);
  }
  // The next line, without its newline ("" at the end of the output).
  std::string line() {
    std::array<char, 4096> buffer{};
    if (std::fgets(buffer.data(), buffer.size(), output_) == nullptr) return "";
    std::string text = buffer.data();
    if (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }
  // Skips lines until one contains `text`; false at the end of the output.
  bool wait_for(const std::string& text) {
    for (std::string next = line();; next = line()) {
      if (next.find(text) != std::string::npos) return true;
      if (std::feof(output_)) return false;
    }
  }
  void signal(int number) { kill(pid_, number); }
  // Waits for the exit; its exit code.
  int exit_code() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  FILE* output_ = nullptr;
};

std::string unique_root() {
  static std::mt19937_64 random{std::random_device{}()};
  return "/cli-" + std::to_string(random() % 1000000000);
}

}  // namespace

TEST_CASE("avout lists, shows and sets what clients made, with scriptable exit codes") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string redis_url = avout::testing::shared_redis().url();
  const std::string root = unique_root();
  const std::string connect = "--zookeeper " + zookeeper + " --root " + root;
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

  auto shown = avout_tool(connect + " show ref /accounts/a --store " + redis_url);
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
      unique_root() + " --stores " + avout::testing::shared_redis().url() + " --stores '" +
      avout::testing::shared_postgres().url() + "' bank --processes 3 --accounts 9 --seconds 3";
  auto run = avout_tool(arguments);
  INFO(run.output);
  CHECK(run.code == 0);
  CHECK(run.output.find("total 9000") != std::string::npos);
  CHECK(run.output.find("WRONG") == std::string::npos);
}

#ifdef AVOUT_BENCH_PATH
TEST_CASE("avout-bench prints its help with exit code 0 and refuses an unknown --only") {
  FILE* pipe = popen((std::string(AVOUT_BENCH_PATH) + " --help 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string help;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) help += buffer.data();
  CHECK(WEXITSTATUS(pclose(pipe)) == 0);
  CHECK(help.find("--only") != std::string::npos);
  pipe = popen((std::string(AVOUT_BENCH_PATH) + " --only atoms 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string refused;
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) refused += buffer.data();
  CHECK(WEXITSTATUS(pclose(pipe)) == 2);
  CHECK(refused.find("atoms") != std::string::npos);
}
#endif

TEST_CASE("avout --version prints the project version and exits 0") {
  auto run = avout_tool("--version");
  CHECK(run.code == 0);
  CHECK(run.output.find("avout 0.") != std::string::npos);
}

TEST_CASE("avout reads ZooKeeper's address from AVOUT_ZOOKEEPER") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string redis_url = avout::testing::shared_redis().url();
  const std::string root = unique_root();
  {
    avout::Client client(avout::ClientOptions{.hosts = zookeeper, .root = root});
    avout::redis::Store redis(redis_url);
    (void)client.ref<long>("/in-redis", 31, redis);
  }
  auto run = avout_tool("--root " + root + " show ref /in-redis --store " + redis_url,
                        "AVOUT_ZOOKEEPER=" + zookeeper);
  INFO(run.output);
  CHECK(run.code == 0);
  CHECK(run.output.find("31") != std::string::npos);
}

TEST_CASE("avout set refuses a value that does not parse as its type before creating anything") {
  const std::string root = unique_root();
  const std::string connect =
      "--zookeeper " + avout::testing::shared_zookeeper().connect_string() + " --root " + root;
  auto trailing = avout_tool(connect + " set atom /x 12abc --type long");
  CHECK(trailing.code == 2);
  CHECK(trailing.output.find("'12abc' is not a long") != std::string::npos);
  CHECK(avout_tool(connect + " set atom /b banana --type bool").code == 2);
  auto word = avout_tool(connect + " set atom /w hello");
  CHECK(word.code == 2);
  auto huge = avout_tool(connect + " set atom /h 99999999999999999999");
  CHECK(huge.code == 2);
  CHECK(huge.output.find("out of range for long") != std::string::npos);
  CHECK(huge.output.find("stol") == std::string::npos);
  const auto atoms = avout_tool(connect + " list atoms");
  CHECK(atoms.code == 0);
  CHECK(atoms.output.empty());  // nothing was created by the refused commands

  CHECK(avout_tool(connect + " set atom /name avout --type string").code == 0);
  auto kind_clash = avout_tool(connect + " set atom /name 5 --type long");
  CHECK(kind_clash.code == 2);
  CHECK(kind_clash.output.find("holds a string") != std::string::npos);
  // Without --type the stored value's type is used.
  CHECK(avout_tool(connect + " set atom /name 5").code == 0);
  CHECK(avout_tool(connect + " set atom /flag true --type bool").code == 0);
  avout::Client client(avout::ClientOptions{
      .hosts = avout::testing::shared_zookeeper().connect_string(), .root = root});
  CHECK(client.atom<std::string>("/name", "").deref() == "5");
  CHECK(client.atom<bool>("/flag", false).deref());
}

TEST_CASE(
    "avout -o json prints lists and reports as JSON, with the type read from the stored bytes") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string root = unique_root();
  const std::string connect = "--zookeeper " + zookeeper + " --root " + root;
  {
    avout::Client client(avout::ClientOptions{.hosts = zookeeper, .root = root});
    (void)client.atom<std::string>("/greeting", "hello");
    (void)client.ref<std::vector<long>>("/list", {1, 2});
  }
  auto atom = avout_tool("-o json " + connect + " show atom /greeting");
  REQUIRE(atom.code == 0);
  const auto report = nlohmann::json::parse(atom.output);
  CHECK(report["kind"] == "atom");
  CHECK(report["type"] == "string");
  CHECK(report["value"] == "hello");
  const auto ref =
      nlohmann::json::parse(avout_tool("-o json " + connect + " show ref /list").output);
  CHECK(ref["type"] == "list");
  CHECK(ref["value"] == nlohmann::json::array({1, 2}));
  CHECK(ref["history"].is_array());
  const auto names = nlohmann::json::parse(avout_tool("-o json " + connect + " list atoms").output);
  CHECK(names == nlohmann::json::array({"/greeting"}));
  auto table = avout_tool("-o table " + connect + " show atom /greeting");
  CHECK(table.output.find("type: string") != std::string::npos);
  CHECK(table.output.find("value: \"hello\"") != std::string::npos);
  CHECK(avout_tool("-o yaml " + connect + " list atoms").code == 2);
}

TEST_CASE("avout watch prints each new value of an atom and of a ref, and stops after --count") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string root = unique_root();
  const std::string connect = "--zookeeper " + zookeeper + " --root " + root;
  avout::Client client(avout::ClientOptions{.hosts = zookeeper, .root = root});
  auto atom = client.atom<long>("/counter", 0);
  {
    Background watching(connect + " watch atom /counter --count 2");
    REQUIRE(watching.wait_for("watching atom /counter"));
    atom.reset(1);
    CHECK(watching.line() == "1");
    atom.reset(2);
    CHECK(watching.line() == "2");
    CHECK(watching.exit_code() == 0);
  }
  auto ref = client.ref<std::string>("/motto", "a");
  Background watching("-o json " + connect + " watch ref /motto --count 1");
  REQUIRE(watching.wait_for("watching ref /motto"));
  client.dosync([&] { ref.ref_set("b"); });
  const auto seen = nlohmann::json::parse(watching.line());
  CHECK(seen["value"] == "b");
  CHECK(seen["type"] == "string");
  CHECK(watching.exit_code() == 0);
  CHECK(avout_tool(connect + " watch atom /absent").code == 3);
}

TEST_CASE("avout watch stops on SIGINT with exit code 0") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string root = unique_root();
  avout::Client client(avout::ClientOptions{.hosts = zookeeper, .root = root});
  (void)client.atom<long>("/quiet", 0);
  Background watching("--zookeeper " + zookeeper + " --root " + root + " watch atom /quiet");
  REQUIRE(watching.wait_for("watching atom /quiet"));
  watching.signal(SIGINT);
  CHECK(watching.exit_code() == 0);
}

TEST_CASE("avout delete removes a ZooKeeper atom and a free lock, and refuses a held lock") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string root = unique_root();
  const std::string connect = "--zookeeper " + zookeeper + " --root " + root;
  avout::Client client(avout::ClientOptions{.hosts = zookeeper, .root = root});
  (void)client.atom<long>("/doomed", 1);
  auto deleted = avout_tool(connect + " delete atom /doomed");
  CHECK(deleted.code == 0);
  CHECK(deleted.output.find("deleted atom /doomed") != std::string::npos);
  CHECK(avout_tool(connect + " list atoms").output.find("/doomed") == std::string::npos);
  CHECK(avout_tool(connect + " delete atom /doomed").code == 3);

  auto lock = client.lock("/jobs/nightly");
  {
    std::scoped_lock held(lock);
    auto refused = avout_tool(connect + " delete lock /jobs/nightly");
    CHECK(refused.code == 1);
    CHECK(refused.output.find("held") != std::string::npos);
  }
  auto freed = avout_tool(connect + " delete lock /jobs/nightly");
  CHECK(freed.code == 0);
  CHECK(freed.output.find("deleted lock /jobs/nightly") != std::string::npos);
  CHECK(avout_tool(connect + " show lock /jobs/nightly").code == 3);
  CHECK(avout_tool(connect + " delete ref /anything").code == 3);  // nothing to delete
  CHECK(avout_tool(connect + " delete table /anything").code == 2);
}

TEST_CASE("avout delete removes refs and agents in any store; show of them says deleted") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string root = unique_root();
  const std::string connect = "--zookeeper " + zookeeper + " --root " + root;
  avout::Client client(avout::ClientOptions{.hosts = zookeeper, .root = root});
  const std::string redis = avout::testing::shared_redis().url();
  auto in_redis = std::make_unique<avout::redis::Store>(redis);
  (void)client.ref<long>("/bank/gone", 5, *in_redis);
  (void)client.agent<long>("/agents/gone", 5);
  (void)client.atom<long>("/hits", 5, *in_redis);

  auto ref = avout_tool(connect + " delete ref /bank/gone --store " + redis);
  CHECK(ref.code == 0);
  CHECK(ref.output.find("deleted ref /bank/gone") != std::string::npos);
  CHECK(in_redis->reference_data(client.ref_value_key("/bank/gone"))->points().empty());
  auto shown = avout_tool(connect + " show ref /bank/gone --store " + redis);
  CHECK(shown.code == 3);
  CHECK(shown.output.find("deleted") != std::string::npos);
  CHECK(avout_tool(connect + " list refs").output.find("/bank/gone") == std::string::npos);

  CHECK(avout_tool(connect + " delete agent /agents/gone").code == 0);
  CHECK(avout_tool(connect + " show agent /agents/gone").output.find("deleted") !=
        std::string::npos);
  CHECK(avout_tool(connect + " delete agent /agents/gone").code == 3);
  CHECK(avout_tool(connect + " delete atom /hits --store " + redis).code == 0);
  CHECK(avout_tool(connect + " get atom /hits --store " + redis).code == 3);

  (void)client.read_write_lock("/site");
  CHECK(avout_tool(connect + " delete rwlock /site").code == 0);
  auto leases = client.lease_lock("/keyed");
  auto lease = leases.lock("k", {.duration = std::chrono::seconds(30)});
  auto held = avout_tool(connect + " delete lease /keyed");
  CHECK(held.code == 1);
  CHECK(held.output.find("held") != std::string::npos);
  leases.unlock(lease);
  CHECK(avout_tool(connect + " delete lease /keyed").code == 0);
  CHECK(avout_tool(connect + " delete lease /keyed").code == 3);
}

TEST_CASE(
    "avout lock runs a command holding the lock, passes its fencing token and exits with its "
    "status") {
  const std::string root = unique_root();
  const std::string connect =
      "--zookeeper " + avout::testing::shared_zookeeper().connect_string() + " --root " + root;
  // The command looks at the lock from outside while it runs, then exits with status 7.
  const std::string inner = std::string(AVOUT_TOOL_PATH) + " " + connect + " show lock /deploy";
  auto run = avout_tool(connect + " lock /deploy -- sh -c 'echo token=$AVOUT_FENCING_TOKEN; " +
                        inner + "; exit 7'");
  INFO(run.output);
  CHECK(run.code == 7);
  CHECK(run.output.find("token=") != std::string::npos);
  CHECK(run.output.find("token=0") == std::string::npos);
  CHECK(run.output.find("token=\n") == std::string::npos);
  CHECK(run.output.find("holder") != std::string::npos);
  CHECK(avout_tool(connect + " show lock /deploy").output.find("free") != std::string::npos);
  CHECK(avout_tool(connect + " lock /deploy -- /no/such/program").code == 127);
}

TEST_CASE("two avout set of a new atom at once both write, neither lost to the other's create") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string connect = "-o json --zookeeper " + zookeeper + " --root " + unique_root();
  for (int i = 0; i < 10; ++i) {
    const std::string name = "/race/" + std::to_string(i);
    Background one(connect + " set atom " + name + " 1");
    Background two(connect + " set atom " + name + " 2");
    CHECK(one.exit_code() == 0);
    CHECK(two.exit_code() == 0);
    auto shown = avout_tool(connect + " show atom " + name);
    REQUIRE(shown.code == 0);
    const auto report = nlohmann::json::parse(shown.output);
    INFO(name << ": " << shown.output);
    // Each set wrote (before, one that lost the create to the other wrote nothing); the
    // creator may write twice when the other's write came between its create and its look.
    CHECK(report["writes"] >= 2);
    CHECK((report["value"] == 1 || report["value"] == 2));
  }
}

TEST_CASE("avout --command-timeout ends a command that waits too long with exit code 1") {
  const auto started = std::chrono::steady_clock::now();
  auto run = avout_tool("--command-timeout 1 --zookeeper 127.0.0.1:1 list refs");
  const auto elapsed = std::chrono::steady_clock::now() - started;
  CHECK(run.code == 1);
  CHECK(elapsed < std::chrono::seconds(4));  // the connect timeout alone is 5 s
}

TEST_CASE("avout --command-timeout ends avout bank and its transferring processes too") {
  const auto started = std::chrono::steady_clock::now();
  // The output is read to its end: a transferring process outliving the tool would hold it.
  auto run = avout_tool("--command-timeout 2 --zookeeper " +
                        avout::testing::shared_zookeeper().connect_string() + " --root " +
                        unique_root() + " bank --processes 2 --accounts 4 --seconds 60");
  const auto elapsed = std::chrono::steady_clock::now() - started;
  INFO(run.output);
  CHECK(run.code == 1);
  CHECK(run.output.find("command timed out") != std::string::npos);
  CHECK(elapsed < std::chrono::seconds(30));  // the bank alone runs for 60 s
}

TEST_CASE("avout --store takes the URL of a Redis or a PostgreSQL store") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string redis_url = avout::testing::shared_redis().url();
  const std::string postgres_url = avout::testing::shared_postgres().url();
  const std::string root = unique_root();
  const std::string connect = "--zookeeper " + zookeeper + " --root " + root;
  {
    avout::Client client(avout::ClientOptions{.hosts = zookeeper, .root = root});
    avout::redis::Store redis(redis_url);
    avout::postgres::Store postgres(postgres_url);
    (void)client.ref<long>("/in-redis", 41, redis);
    (void)client.ref<long>("/in-postgres", 43, postgres);
  }
  auto in_redis = avout_tool(connect + " show ref /in-redis --store " + redis_url);
  INFO(in_redis.output);
  CHECK(in_redis.code == 0);
  CHECK(in_redis.output.find("41") != std::string::npos);
  auto in_postgres = avout_tool(connect + " show ref /in-postgres --store '" + postgres_url + "'");
  INFO(in_postgres.output);
  CHECK(in_postgres.code == 0);
  CHECK(in_postgres.output.find("43") != std::string::npos);
  CHECK(avout_tool(connect + " set atom /pg-counter 5 --store '" + postgres_url + "'").code == 0);
  CHECK(avout_tool(connect + " show atom /pg-counter --store '" + postgres_url + "'")
            .output.find("5") != std::string::npos);
  avout::Client client(avout::ClientOptions{.hosts = zookeeper, .root = root});
  avout::postgres::Store postgres(postgres_url);
  CHECK(client.atom<long>("/pg-counter", 0, postgres).deref() == 5);
  // The atom's record names postgresql:default: another store is refused (usage, exit 2).
  CHECK(avout_tool(connect + " show atom /pg-counter --store zookeeper:").code == 2);
}

TEST_CASE(
    "avout refuses a store URL of an unregistered scheme with exit code 2, naming the registered "
    "schemes but no password") {
  const std::string connect = "--zookeeper " + avout::testing::shared_zookeeper().connect_string() +
                              " --root " + unique_root();
  auto run =
      avout_tool(connect + " show ref /x --store 'mongodb://admin:s3cret-pw@127.0.0.1:27017/db'");
  INFO(run.output);
  CHECK(run.code == 2);
  CHECK(run.output.find("mongodb") != std::string::npos);
  CHECK(run.output.find("zookeeper") != std::string::npos);
  CHECK(run.output.find("redis") != std::string::npos);
  CHECK(run.output.find("postgresql") != std::string::npos);
  CHECK(run.output.find("s3cret") == std::string::npos);
  auto gc = avout_tool(connect + " --stores 'mongodb://admin:s3cret-pw@127.0.0.1:27017/db' gc");
  INFO(gc.output);
  CHECK(gc.code == 2);
  CHECK(gc.output.find("s3cret") == std::string::npos);
}

TEST_CASE(
    "avout refuses an unregistered store scheme with exit code 2 at once even when ZooKeeper is "
    "down") {
  // Port 1: nothing listens there, so a connection attempt would end in exit 1 after 5 s.
  const std::string unreachable = "--zookeeper 127.0.0.1:1 --command-timeout 20";
  for (const std::string arguments :
       {" show ref /x --store 'mongodb://admin:s3cret-pw@127.0.0.1/db'",
        " --stores 'mongodb://admin:s3cret-pw@127.0.0.1/db' gc",
        " --stores 'mongodb://admin:s3cret-pw@127.0.0.1/db' bank"}) {
    const auto started = std::chrono::steady_clock::now();
    auto run = avout_tool(unreachable + arguments);
    INFO(arguments, run.output);
    CHECK(run.code == 2);
    CHECK(std::chrono::steady_clock::now() - started < 3s);
    CHECK(run.output.find("registered: ") != std::string::npos);
    CHECK(run.output.find("redis") != std::string::npos);
    CHECK(run.output.find("s3cret") == std::string::npos);
  }
}

TEST_CASE("avout names a stray argument after --stores without the password a URL in it holds") {
  const std::string connect = "--zookeeper 127.0.0.1:1 --stores redis://127.0.0.1:1";
  auto run = avout_tool(connect + " 'postgresql://admin:s3cret-pw@127.0.0.1/db' gc");
  INFO(run.output);
  CHECK(run.code == 2);
  CHECK(run.output.find("unexpected argument(s): postgresql://...") != std::string::npos);
  CHECK(run.output.find("s3cret") == std::string::npos);
  auto plain = avout_tool(connect + " gc stray");
  CHECK(plain.code == 2);
  CHECK(plain.output.find("stray") != std::string::npos);
}

TEST_CASE("avout gc sweeps the stores AVOUT_STORES names, besides ZooKeeper") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string redis_url = avout::testing::shared_redis().url();
  const std::string root = unique_root();
  avout::Client client(avout::ClientOptions{.hosts = zookeeper, .root = root});
  avout::redis::Store redis(redis_url);
  (void)client.ref<long>("/swept", 1, redis);
  // A value no head references, written by a session that never existed (so is not alive).
  auto values = redis.reference_data(client.ref_value_key("/swept"));
  values->set(avout::Bytes{'9'}, avout::Point{"00000000deadbeef-1"});
  const auto orphaned = [&] {
    const auto points = values->points();
    return std::count(points.begin(), points.end(), avout::Point{"00000000deadbeef-1"});
  };
  const std::string gc = "--zookeeper " + zookeeper + " --root " + root + " gc";
  auto without = avout_tool(gc);
  CHECK(without.code == 0);
  CHECK(without.output.find("values erased 0") != std::string::npos);
  CHECK(orphaned() == 1);
  // Space and comma separated, the client's own store named too: each store swept once.
  auto with = avout_tool(gc, "AVOUT_STORES='zookeeper:, " + redis_url + "'");
  INFO(with.output);
  CHECK(with.code == 0);
  CHECK(with.output.find("values erased 1") != std::string::npos);
  CHECK(orphaned() == 0);
  CHECK(client.ref<long>("/swept", 0, redis).deref() == 1);
  // A PostgreSQL multi-host URL stays one URL, also when a later host is named like a scheme.
  std::string multi_host = avout::testing::shared_postgres().url();
  multi_host.insert(multi_host.rfind('/'), ",postgres:5432,redis:6379");
  auto postgres = avout_tool(gc, "AVOUT_STORES='" + redis_url + "," + multi_host + "'");
  INFO(postgres.output);
  CHECK(postgres.code == 0);
}

namespace {

// Runs the tool until `accept` takes its JSON output (parsed), for at most 20 s; the last
// output parsed (null when it never parsed).
nlohmann::json json_until(const std::string& arguments,
                          const std::function<bool(const nlohmann::json&)>& accept) {
  nlohmann::json seen;
  const auto until = std::chrono::steady_clock::now() + avout::testing::scaled(20s);
  while (std::chrono::steady_clock::now() < until) {
    const auto run = avout_tool("-o json " + arguments);
    seen = nlohmann::json::parse(run.output, nullptr, false);
    if (run.code == 0 && !seen.is_discarded() && accept(seen)) break;
    std::this_thread::sleep_for(100ms);
  }
  return seen;
}

// A command ignoring SIGTERM (its shell and the sleeps it starts): only a SIGKILL ends it.
const std::string stubborn_command =
    "sh -c 'trap \"\" TERM; echo running; while :; do sleep 0.1; done'";

// Freezes `frozen` (SIGSTOP) while `take_over` waits for its session to end, thaws it, and
// checks that it then stops its command for the loss of `hold`: SIGTERM, which the
// stubborn_command ignores, then SIGKILL.
void check_killed_after_freeze(Background& frozen, const std::string& hold,
                               const std::function<void()>& take_over) {
  frozen.signal(SIGSTOP);
  take_over();
  frozen.signal(SIGCONT);
  CHECK(frozen.wait_for(hold + " was lost; stopping the command"));
  CHECK(frozen.wait_for("killing it"));
  CHECK(frozen.exit_code() == 128 + SIGKILL);
}

std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("avout lists and shows semaphores, elections, barriers and queues, as text and JSON") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string root = unique_root();
  const std::string connect = "--zookeeper " + zookeeper + " --root " + root;
  avout::Client client(avout::ClientOptions{.hosts = zookeeper, .root = root});
  avout::Client other(avout::ClientOptions{.hosts = zookeeper, .root = root});

  // A semaphore of 2 permits, both held, and a third acquire waiting behind them.
  auto semaphore = client.semaphore("/pool", 2);
  auto first = semaphore.acquire();
  auto second = semaphore.acquire();
  auto waiting_permit = std::async(std::launch::async, [&] {
    return other.semaphore("/pool", 2).acquire(avout::Deadline::after(60s));
  });
  const auto pool = json_until(connect + " show semaphore /pool", [](const nlohmann::json& seen) {
    return seen["waiters"].size() == 1;
  });
  INFO(pool.dump());
  CHECK(pool["kind"] == "semaphore");
  CHECK(pool["name"] == "/pool");
  CHECK(pool["permits"] == 2);
  CHECK(pool["held"] == 2);
  REQUIRE(pool["holders"].size() == 2);
  CHECK(pool["holders"][0]["token"] == first.fencing_token());
  CHECK(pool["holders"][1]["token"] == second.fencing_token());
  CHECK(pool["holders"][0]["owner"].get<std::string>().starts_with("session 0x"));
  REQUIRE(pool["waiters"].size() == 1);
  CHECK(pool["waiters"][0]["node"].get<std::string>().starts_with("q-"));
  auto pool_table = avout_tool(connect + " show semaphore /pool");
  CHECK(pool_table.code == 0);
  CHECK(pool_table.output.find("semaphore /pool") != std::string::npos);
  CHECK(pool_table.output.find("holders: 2") != std::string::npos);
  CHECK(pool_table.output.find("waiters: 1") != std::string::npos);

  // An election led by "alpha" with "beta" in line behind it.
  auto alpha = client.leader_election("/leader", "alpha");
  alpha.campaign();
  auto beta = other.leader_election("/leader", "beta");
  auto campaigning =
      std::async(std::launch::async, [&] { beta.campaign(avout::Deadline::after(60s)); });
  const auto leader =
      json_until(connect + " show election /leader",
                 [](const nlohmann::json& seen) { return seen["candidates"].size() == 2; });
  INFO(leader.dump());
  CHECK(leader["kind"] == "election");
  CHECK(leader["leader"] == "alpha");
  CHECK(leader["fencing_token"] == alpha.fencing_token());
  REQUIRE(leader["candidates"].size() == 2);
  CHECK(leader["candidates"][0]["id"] == "alpha");
  CHECK(leader["candidates"][1]["id"] == "beta");
  CHECK(leader["candidates"][1]["owner"] != leader["candidates"][0]["owner"]);
  CHECK(avout_tool(connect + " show election /leader").output.find("leader: alpha") !=
        std::string::npos);

  // A barrier of 2: one participant waits for the other, then both are inside.
  auto meet_one = client.barrier("/meet", 2);
  auto meet_two = other.barrier("/meet", 2);
  auto entering =
      std::async(std::launch::async, [&] { meet_one.enter(avout::Deadline::after(60s)); });
  const auto open = json_until(connect + " show barrier /meet", [](const nlohmann::json& seen) {
    return seen["waiting"].size() == 1;
  });
  INFO(open.dump());
  CHECK(open["kind"] == "barrier");
  CHECK(open["participants"] == 2);
  CHECK(open["round"] == 0);
  CHECK(open["state"] == "open");
  CHECK(open["members"].empty());
  CHECK_FALSE(open.contains("previous_round"));  // the first round has none
  meet_two.enter(avout::Deadline::after(60s));
  entering.get();
  const auto closed =
      nlohmann::json::parse(avout_tool("-o json " + connect + " show barrier /meet").output);
  INFO(closed.dump());
  CHECK(closed["state"] == "closed");
  REQUIRE(closed["members"].size() == 2);
  CHECK(closed["members"][0]["state"] == "inside");
  CHECK(closed["members"][1]["state"] == "inside");
  CHECK(closed["waiting"].empty());
  CHECK(avout_tool(connect + " show barrier /meet").output.find("state: closed") !=
        std::string::npos);

  // A work queue of two items, and an empty one with a taker waiting.
  auto jobs = client.work_queue<std::string>("/jobs");
  jobs.put("first");
  jobs.put("second");
  auto idle = other.work_queue<std::string>("/idle");
  auto taking =
      std::async(std::launch::async, [&] { return idle.take(avout::Deadline::after(60s)); });
  const auto queue =
      nlohmann::json::parse(avout_tool("-o json " + connect + " show queue /jobs").output);
  INFO(queue.dump());
  CHECK(queue["kind"] == "queue");
  CHECK(queue["length"] == 2);
  CHECK(queue["waiting_takers"] == 0);
  CHECK(queue["oldest"]["value"] == "first");
  CHECK(queue["oldest"]["type"] == "string");
  CHECK(queue["oldest"]["put_at"].get<std::string>().ends_with("Z"));
  CHECK(queue["oldest"]["put_at_ms"].get<std::int64_t>() > 0);
  const auto waited = json_until(connect + " show queue /idle", [](const nlohmann::json& seen) {
    return seen["waiting_takers"] == 1;
  });
  CHECK(waited["length"] == 0);
  CHECK(waited["oldest"].is_null());
  CHECK(waited["waiting_takers"] == 1);
  auto queue_table = avout_tool(connect + " show queue /jobs");
  CHECK(queue_table.output.find("length: 2") != std::string::npos);
  CHECK(queue_table.output.find("value: \"first\"") != std::string::npos);

  // A participant dropped between enter and leave: its node goes without a leaving record.
  {
    auto stays = client.barrier("/broken", 2);
    auto dropped = std::make_optional(other.barrier("/broken", 2));
    auto entered =
        std::async(std::launch::async, [&] { stays.enter(avout::Deadline::after(60s)); });
    dropped->enter(avout::Deadline::after(60s));
    entered.get();
    dropped.reset();
    const auto broken =
        json_until(connect + " show barrier /broken", [](const nlohmann::json& seen) {
          return seen["members"].size() == 2 &&
                 (seen["members"][0]["state"] == "dead" || seen["members"][1]["state"] == "dead");
        });
    INFO(broken.dump());
    REQUIRE(broken["members"].size() == 2);
    const auto& members = broken["members"];
    const int dead = members[0]["state"] == "dead" ? 0 : 1;
    CHECK(members[dead]["owner"] == "gone");
    CHECK(members[1 - dead]["state"] == "inside");
  }
  // Names nested below others are listed too, an election nobody campaigns in included.
  (void)client.leader_election("/leader/standby", "nobody");
  (void)client.work_queue<std::string>("/jobs/urgent");

  const auto names = [&](const std::string& kind) {
    return nlohmann::json::parse(avout_tool("-o json " + connect + " list " + kind).output);
  };
  CHECK(names("semaphores") == nlohmann::json::array({"/pool"}));
  CHECK(names("elections") == nlohmann::json::array({"/leader", "/leader/standby"}));
  CHECK(names("barriers") == nlohmann::json::array({"/broken", "/meet"}));
  CHECK(names("queues") == nlohmann::json::array({"/idle", "/jobs", "/jobs/urgent"}));
  CHECK(avout_tool(connect + " list queues").output == "/idle\n/jobs\n/jobs/urgent\n");

  // Missing names exit 3 and create nothing.
  for (const std::string kind : {"semaphore", "election", "barrier", "queue"}) {
    auto missing = avout_tool(connect + " show " + kind + " /nope");
    INFO(kind << ": " << missing.output);
    CHECK(missing.code == 3);
    CHECK(missing.output.find(kind + " /nope does not exist") != std::string::npos);
  }
  CHECK(names("elections") == nlohmann::json::array({"/leader", "/leader/standby"}));
  CHECK(avout_tool(connect + " show semaphore relative").code == 2);

  // Everyone lets go: the waiters get their turn.
  first.release();
  CHECK(waiting_permit.get().is_held());
  alpha.resign();
  campaigning.get();
  CHECK(beta.is_leader());
  client.work_queue<std::string>("/idle").put("wake");
  CHECK(taking.get() == "wake");
  auto leaving =
      std::async(std::launch::async, [&] { meet_one.leave(avout::Deadline::after(60s)); });
  meet_two.leave(avout::Deadline::after(60s));
  leaving.get();
  const auto reopened =
      nlohmann::json::parse(avout_tool("-o json " + connect + " show barrier /meet").output);
  CHECK(reopened["state"] == "open");
  CHECK(reopened["round"] == 1);
  CHECK(reopened["previous_round"] == "completed");
}

TEST_CASE(
    "avout elect runs a command while leading; a second waits in line and leads once the first "
    "command exits") {
  const std::string root = unique_root();
  const std::string connect =
      "--zookeeper " + avout::testing::shared_zookeeper().connect_string() + " --root " + root;
  const auto directory = std::filesystem::temp_directory_path() / ("avout-elect" + root.substr(4));
  std::filesystem::create_directories(directory);
  const auto first_file = directory / "first", second_file = directory / "second",
             go = directory / "go";
  // Each command writes its token and id, then what `avout show election` says while it runs.
  const auto command = [&](const std::filesystem::path& file, const std::string& then) {
    return "sh -c 'echo $AVOUT_FENCING_TOKEN $AVOUT_LEADER_ID > " + file.string() + "; " +
           AVOUT_TOOL_PATH + " -o json " + connect + " show election /deploy >> " + file.string() +
           "; " + then + "'";
  };
  Background first(
      connect + " elect /deploy --id first -- " +
      command(first_file, "while [ ! -e " + go.string() + " ]; do sleep 0.05; done; exit 5"));
  REQUIRE(first.wait_for("leading election /deploy as first"));
  Background second(connect + " elect /deploy --id second -- " + command(second_file, "exit 0"));
  const auto line = json_until(connect + " show election /deploy", [](const nlohmann::json& seen) {
    return seen["candidates"].size() == 2;
  });
  INFO(line.dump());
  CHECK(line["leader"] == "first");
  REQUIRE(line["candidates"].size() == 2);
  CHECK(line["candidates"][1]["id"] == "second");
  REQUIRE(avout::testing::wait_for_file(first_file, avout::testing::scaled(20s)));
  CHECK_FALSE(std::filesystem::exists(second_file));  // waits while the first leads

  std::ofstream(go) << "go\n";
  CHECK(first.exit_code() == 5);  // the command's status
  CHECK(second.exit_code() == 0);
  std::uint64_t first_token = 0, second_token = 0;
  std::string first_id, second_id;
  std::istringstream first_lines(read_file(first_file)), second_lines(read_file(second_file));
  first_lines >> first_token >> first_id;
  second_lines >> second_token >> second_id;
  CHECK(first_id == "first");
  CHECK(second_id == "second");
  CHECK(first_token > 0);
  CHECK(second_token > first_token);
  std::string shown;
  std::getline(first_lines >> std::ws, shown);
  const auto seen_by_first = nlohmann::json::parse(shown);
  CHECK(seen_by_first["leader"] == "first");
  CHECK(seen_by_first["fencing_token"] == first_token);
  std::getline(second_lines >> std::ws, shown);
  CHECK(nlohmann::json::parse(shown)["leader"] == "second");
  // Both resigned: nobody is left in line.
  const auto after =
      nlohmann::json::parse(avout_tool("-o json " + connect + " show election /deploy").output);
  CHECK(after["leader"].is_null());
  CHECK(after["candidates"].empty());
  CHECK(avout_tool(connect + " elect /deploy -- /no/such/program").code == 127);
  std::filesystem::remove_all(directory);
}

TEST_CASE(
    "avout elect stops its command once leadership is revoked (frozen past the session timeout), "
    "and --timeout gives up without running it") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string root = unique_root();
  const std::string connect = "--zookeeper " + zookeeper + " --root " + root;
  Background frozen("--session-timeout 2 " + connect +
                    " elect /frozen --id frozen --kill-after 1 -- " + stubborn_command);
  REQUIRE(frozen.wait_for("leading election /frozen as frozen"));
  REQUIRE(frozen.wait_for("running"));
  avout::Client client(
      avout::ClientOptions{.hosts = zookeeper, .session_timeout = 2000ms, .root = root});
  auto next = client.leader_election("/frozen", "next");
  check_killed_after_freeze(frozen, "leadership of election /frozen", [&] {
    next.campaign(avout::Deadline::after(avout::testing::scaled(30s)));  // the session ended
    CHECK(next.leader() == "next");
  });
  CHECK(next.is_leader());

  // While "next" leads, a bounded campaign gives up with exit code 1 and runs nothing.
  const auto marker =
      std::filesystem::temp_directory_path() / ("avout-elect-timeout" + root.substr(4));
  auto late = avout_tool(connect + " elect /frozen --timeout 1 -- touch " + marker.string());
  INFO(late.output);
  CHECK(late.code == 1);
  CHECK_FALSE(std::filesystem::exists(marker));
  const auto line =
      nlohmann::json::parse(avout_tool("-o json " + connect + " show election /frozen").output);
  CHECK(line["leader"] == "next");
  CHECK(line["candidates"].size() == 1);  // the timed-out candidate withdrew
}

TEST_CASE("avout lock stops its command once the hold is lost: SIGTERM, then SIGKILL") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string root = unique_root();
  const std::string connect = "--zookeeper " + zookeeper + " --root " + root;
  // As `elect`'s (the same code runs both): a command ignoring SIGTERM is killed.
  Background frozen("--session-timeout 2 " + connect + " lock /nightly --kill-after 1 -- " +
                    stubborn_command);
  REQUIRE(frozen.wait_for("running"));
  avout::Client client(
      avout::ClientOptions{.hosts = zookeeper, .session_timeout = 2000ms, .root = root});
  auto lock = client.lock("/nightly");
  bool taken = false;
  check_killed_after_freeze(frozen, "lock /nightly", [&] {
    taken = lock.try_lock_for(avout::testing::scaled(30s));  // once the frozen session ended
  });
  REQUIRE(taken);
  lock.unlock();
}

TEST_CASE("avout elect passes SIGTERM on to its command and resigns once the command exits") {
  const std::string root = unique_root();
  const std::string connect =
      "--zookeeper " + avout::testing::shared_zookeeper().connect_string() + " --root " + root;
  Background leading(connect +
                     " elect /service --id serving -- sh -c 'echo running; while :; do "
                     "sleep 0.1; done'");
  REQUIRE(leading.wait_for("running"));
  leading.signal(SIGTERM);
  CHECK(leading.exit_code() == 128 + SIGTERM);  // the command's status: it got the SIGTERM
  // Resigned before exiting: nobody leads, at once (not one session timeout later).
  const auto line =
      nlohmann::json::parse(avout_tool("-o json " + connect + " show election /service").output);
  CHECK(line["leader"].is_null());
  CHECK(line["candidates"].empty());
}

namespace {

// The lines of `text`, without their newlines.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("avout durations take ms, s, m and h; a bad one is one line naming its option") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string connect = "--zookeeper " + zookeeper + " --root " + unique_root();
  auto with_units = avout_tool(connect +
                               " --command-timeout 5m --session-timeout 2500ms "
                               "--connect-timeout 1m list refs");
  INFO(with_units.output);
  CHECK(with_units.code == 0);
  CHECK(avout_tool(connect + " --command-timeout 30 list refs").code == 0);         // bare: seconds
  const auto five_seconds = std::to_string(avout::testing::scaled(5s) / 1s) + "s";  // "5s"
  CHECK(avout_tool(connect + " --command-timeout " + five_seconds + " list refs").code == 0);
  for (const std::string arguments :
       {"--command-timeout 5x list refs", "--command-timeout 99999999999999999999999 list refs",
        "--session-timeout 11m list refs", "--session-timeout 500ms list refs",
        "--connect-timeout -1s list refs", "lock /x --kill-after 2h -- true",
        "elect /x --timeout 1.5s -- true", "gc --grace 0", "bank --seconds 2d"}) {
    auto refused = avout_tool(connect + " " + arguments);
    INFO(arguments << ": " << refused.output);
    CHECK(refused.code == 2);
    const auto lines = lines_of(refused.output);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].size() < 160);
    const auto option_start = arguments.find("--");
    const std::string option =
        arguments.substr(option_start, arguments.find(' ', option_start) - option_start);
    CHECK(lines[0].find(option + ": ") != std::string::npos);
  }
  CHECK(avout_tool(connect + " --command-timeout 5x list refs").output.find("ms, s, m or h") !=
        std::string::npos);
  CHECK(avout_tool(connect + " --session-timeout 11m list refs").output.find("1s to 10m") !=
        std::string::npos);
}

TEST_CASE("avout prints no client log unless -v: an unreachable server is one line, exit 1") {
  // Nothing listens on port 1; the client's refused attempts start at once.
  const std::string unreachable = "--zookeeper 127.0.0.1:1 --connect-timeout " +
                                  std::to_string(avout::testing::scaled(1000ms).count()) +
                                  "ms list refs";
  auto quiet = avout_tool(unreachable);
  INFO(quiet.output);
  CHECK(quiet.code == 1);
  const auto lines = lines_of(quiet.output);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("cannot reach ZooKeeper at 127.0.0.1:1") != std::string::npos);
  auto verbose = avout_tool("-v " + unreachable);
  INFO(verbose.output);
  CHECK(verbose.code == 1);
  CHECK(verbose.output.find("zookeeper client: ") != std::string::npos);
  CHECK(lines_of(verbose.output).size() > 1);
  CHECK(verbose.output.find("avout: info: ") == std::string::npos);
  auto informative = avout_tool("-vv " + unreachable);
  CHECK(informative.code == 1);
  CHECK(informative.output.find("avout: info: zookeeper client: ") != std::string::npos);
  CHECK(avout_tool("-vvv " + unreachable).code == 1);
}

TEST_CASE("avout -o json gives values typed, with short type names; get prints the value alone") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string redis_url = avout::testing::shared_redis().url();
  const std::string root = unique_root();
  const std::string connect = "--zookeeper " + zookeeper + " --root " + root;
  {
    avout::Client client(avout::ClientOptions{.hosts = zookeeper, .root = root});
    (void)client.atom<long>("/count", 5);
    (void)client.atom<std::string>("/text", "say \"hi\"");
    (void)client.atom<double>("/ratio", 0.5);
    (void)client.atom<bool>("/flag", true);
    (void)client.atom<nlohmann::json>("/doc", nlohmann::json{{"a", {1, 2}}, {"b", "c"}});
    (void)client.atom<avout::Bytes>("/raw", avout::Bytes{0x00, 0xff, 0x10});
    (void)client.atom<std::map<std::string, long>>("/map", {{"x", 1}, {"y", 2}});
    (void)client.atom<std::map<long, long>>("/by-number", {{1, 10}});
    (void)client.atom<std::optional<long>>("/none", std::nullopt);
    avout::redis::Store redis(redis_url);
    (void)client.ref<long>("/in-redis", 41, redis);
    (void)client.agent<std::string>("/worker", "idle");
  }
  const auto shown = [&](const std::string& name) {
    auto run = avout_tool("-o json " + connect + " show atom " + name);
    INFO(name << ": " << run.output);
    REQUIRE(run.code == 0);
    return nlohmann::json::parse(run.output);
  };
  CHECK(shown("/count")["type"] == "long");
  CHECK(shown("/count")["value"] == 5);
  CHECK(shown("/text")["type"] == "string");
  CHECK(shown("/text")["value"] == "say \"hi\"");
  CHECK(shown("/ratio")["type"] == "double");
  CHECK(shown("/ratio")["value"] == 0.5);
  CHECK(shown("/flag")["value"] == true);
  CHECK(shown("/doc")["type"] == "json");
  CHECK(shown("/doc")["value"] == nlohmann::json{{"a", {1, 2}}, {"b", "c"}});
  const auto raw = shown("/raw");
  CHECK(raw["type"] == "bytes");
  CHECK(raw["value"] == "AP8Q");
  CHECK(raw["encoding"] == "base64");
  CHECK_FALSE(shown("/count").contains("encoding"));
  CHECK(shown("/map")["type"] == "map");
  CHECK(shown("/map")["value"] == nlohmann::json{{"x", 1}, {"y", 2}});
  CHECK(shown("/by-number")["value"] == nlohmann::json::array({nlohmann::json::array({1, 10})}));
  CHECK(shown("/none")["type"] == "optional");
  CHECK(shown("/none")["value"].is_null());
  // The table stays readable: a stored value is shown as JSON, strings quoted.
  auto table = avout_tool(connect + " show atom /doc");
  CHECK(table.output.find("type: json") != std::string::npos);
  CHECK(table.output.find(R"(value: {"a":[1,2],"b":"c"})") != std::string::npos);

  // get: the value alone, a string without quotes unless -o json.
  CHECK(avout_tool(connect + " get atom /count").output == "5\n");
  CHECK(avout_tool(connect + " get atom /text").output == "say \"hi\"\n");
  CHECK(avout_tool("-o json " + connect + " get atom /text").output == "\"say \\\"hi\\\"\"\n");
  CHECK(avout_tool(connect + " get atom /doc").output == R"({"a":[1,2],"b":"c"})"
                                                         "\n");
  CHECK(avout_tool(connect + " get atom /raw").output == "AP8Q\n");
  CHECK(avout_tool(connect + " get ref /in-redis --store " + redis_url).output == "41\n");
  CHECK(avout_tool(connect + " get agent /worker").output == "idle\n");
  auto missing = avout_tool(connect + " get atom /absent");
  CHECK(missing.code == 3);
  CHECK(missing.output.find("/absent") != std::string::npos);
  CHECK(avout_tool(connect + " get ref /absent").code == 3);
  CHECK(avout_tool(connect + " get agent /absent").code == 3);
  // The ref's value is in Redis, which no --stores names: refused, not read elsewhere.
  CHECK(avout_tool(connect + " get ref /in-redis").code == 2);
  CHECK(avout_tool(connect + " get lock /x").code == 2);
}

TEST_CASE("avout list is sorted by name and --prefix keeps the names under a path") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string root = unique_root();
  const std::string connect = "--zookeeper " + zookeeper + " --root " + root;
  {
    avout::Client client(avout::ClientOptions{.hosts = zookeeper, .root = root});
    for (const std::string name : {"/c", "/a/x", "/b", "/ab", "/a", "/a/x/y"})
      (void)client.atom<long>(name, 1);
  }
  CHECK(avout_tool(connect + " list atoms").output == "/a\n/a/x\n/a/x/y\n/ab\n/b\n/c\n");
  CHECK(nlohmann::json::parse(avout_tool("-o json " + connect + " list atoms").output) ==
        nlohmann::json::array({"/a", "/a/x", "/a/x/y", "/ab", "/b", "/c"}));
  CHECK(avout_tool(connect + " list atoms --prefix /a").output == "/a\n/a/x\n/a/x/y\n");
  CHECK(nlohmann::json::parse(
            avout_tool("-o json " + connect + " list atoms --prefix /a/x").output) ==
        nlohmann::json::array({"/a/x", "/a/x/y"}));
  CHECK(avout_tool(connect + " list atoms --prefix /").output.size() ==
        avout_tool(connect + " list atoms").output.size());
  auto none = avout_tool(connect + " list atoms --prefix /nothing");
  CHECK(none.code == 0);
  CHECK(none.output.empty());
  CHECK(avout_tool(connect + " list atoms --prefix relative").code == 2);
}

TEST_CASE("avout help prints help, shows defaults and describes every option") {
  for (const std::string arguments : {"help", "--help"}) {
    auto run = avout_tool(arguments);
    INFO(arguments << ": " << run.output);
    CHECK(run.code == 0);
    CHECK(run.output.find("Subcommands:") != std::string::npos);
    CHECK(run.output.find("A subcommand is required") == std::string::npos);
    CHECK(run.output.find("--session-timeout DURATION=10s") != std::string::npos);
    CHECK(run.output.find("--root TEXT=/avout") != std::string::npos);
    CHECK(run.output.find("-v,--verbose") != std::string::npos);
  }
  auto bank = avout_tool("help bank");
  INFO(bank.output);
  CHECK(bank.code == 0);
  CHECK(bank.output.find("bank [OPTIONS]") != std::string::npos);
  CHECK(bank.output.find("=4") != std::string::npos);  // --processes' default
  CHECK(bank.output.find("--seconds DURATION=10s") != std::string::npos);
  // Every option line of every command carries a description (on its line or the next).
  for (const std::string command :
       {"list", "get", "show", "set", "watch", "delete", "lock", "elect", "gc", "bank"}) {
    const auto lines = lines_of(avout_tool("help " + command).output);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (!lines[i].starts_with("  -")) continue;
      // CLI11 starts descriptions in column 30.
      const bool described =
          (lines[i].size() > 30 && lines[i][29] == ' ' && lines[i][30] != ' ') ||
          (i + 1 < lines.size() && lines[i + 1].starts_with(std::string(30, ' ')));
      INFO(command << ": " << lines[i]);
      CHECK(described);
    }
  }
  CHECK(avout_tool("help gc").output.find("--grace DURATION=10m") != std::string::npos);
  CHECK(avout_tool("help frobnicate").code == 2);
}

TEST_CASE("avout refuses a --digest that is not user:password as a usage error, unechoed") {
  for (const std::string digest : {"bad", ":s3cret-pw", "user:", ":"}) {
    auto run = avout_tool("--zookeeper 127.0.0.1:1 --digest '" + digest + "' list refs");
    INFO(digest << ": " << run.output);
    CHECK(run.code == 2);
    CHECK(run.output.find("--digest: expected user:password") != std::string::npos);
    CHECK(run.output.find("s3cret") == std::string::npos);
    CHECK(lines_of(run.output).size() == 1);
  }
  auto from_environment = avout_tool("--zookeeper 127.0.0.1:1 list refs", "AVOUT_DIGEST=no-colon");
  CHECK(from_environment.code == 2);
}

TEST_CASE("avout finds an object's store from its record among the --stores, by scheme and name") {
  const std::string zookeeper = avout::testing::shared_zookeeper().connect_string();
  const std::string redis_url = avout::testing::shared_redis().url();
  const std::string postgres_url = avout::testing::shared_postgres().url();
  const std::string root = unique_root();
  const std::string connect = "--zookeeper " + zookeeper + " --root " + root;
  const std::string main_url = redis_url + "?name=main";
  avout::Client client(avout::ClientOptions{.hosts = zookeeper, .root = root});
  avout::redis::Store main(main_url);
  avout::postgres::Store postgres(postgres_url);
  (void)client.ref<long>("/r", 41, main);
  (void)client.atom<std::string>("/a", "hello", postgres);
  (void)client.agent<long>("/g", 7, main);
  (void)client.atom<long>("/z", 5);
  const std::string stores = "AVOUT_STORES='" + main_url + " " + postgres_url + "'";

  auto shown = avout_tool(connect + " show ref /r", stores);
  INFO(shown.output);
  CHECK(shown.code == 0);
  CHECK(shown.output.find("41") != std::string::npos);
  CHECK(shown.output.find("ref /r in redis:main") != std::string::npos);
  CHECK(avout_tool(connect + " get atom /a", stores).output == "hello\n");
  CHECK(avout_tool(connect + " --stores " + main_url + " get agent /g").output == "7\n");
  CHECK(avout_tool(connect + " set atom /a bye", stores).code == 0);
  CHECK(avout_tool(connect + " get atom /a", stores).output == "bye\n");
  // ZooKeeper needs no configuration.
  CHECK(avout_tool(connect + " get atom /z").output == "5\n");
  auto json = avout_tool("-o json " + connect + " show atom /z");
  CHECK(nlohmann::json::parse(json.output)["store"] == "zookeeper:default");

  // A recorded store no --stores URL names: a usage error naming it, never a password.
  auto unknown = avout_tool(connect + " --stores 'redis://:s3cret-pw@127.0.0.1:1/?name=other' "
                                      "get ref /r");
  INFO(unknown.output);
  CHECK(unknown.code == 2);
  CHECK(unknown.output.find("ref /r: its values are in redis:main") != std::string::npos);
  CHECK(unknown.output.find("redis:other") != std::string::npos);
  CHECK(unknown.output.find("s3cret") == std::string::npos);
  // --store must agree with the record.
  auto contradicted = avout_tool(connect + " show ref /r --store " + redis_url, stores);
  CHECK(contradicted.code == 2);
  CHECK(contradicted.output.find("redis:main; --store names redis:default") != std::string::npos);
  CHECK(avout_tool(connect + " get ref /r --store " + main_url).output == "41\n");

  // A value missing from its store: show prints what it has and exits 3, as get does.
  const auto head = avout::inspect::ref_head(client, "/r");
  REQUIRE(head);
  main.reference_data(client.ref_value_key("/r"))->erase(head->newest);
  auto missing = avout_tool(connect + " show ref /r", stores);
  INFO(missing.output);
  CHECK(missing.code == 3);
  CHECK(missing.output.find("missing from the store") != std::string::npos);
  CHECK(avout_tool(connect + " get ref /r", stores).code == 3);
}
