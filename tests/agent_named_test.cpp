// Named agent actions: a send carries an action's name and encoded arguments, so any process
// that defined the name runs it, not only its sender; each still runs once, in queue order.
#include <avout/avout.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using avout::testing::scaled;
using avout::testing::wait_for_file;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/agent-named-test", stem);
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 2000ms};
}

using Log = std::vector<long>;

}  // namespace

TEST_CASE(
    "named actions sent from 3 processes each run once, in each sender's order, and "
    "processes run one another's") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("three");
  constexpr int processes = 3;
  constexpr int rounds = 8;  // per process: one send, then a dosync sending one
  constexpr long slow_id = 999999;
  const auto directory = std::filesystem::temp_directory_path() /
                         ("avout-agent-named-" + name.substr(name.rfind('-') + 1));
  std::filesystem::create_directories(directory);
  {
    avout::Client setup(options());
    (void)setup.agent<Log>(name, {});
  }
  const auto codes = avout::testing::run_in_processes(
      processes,
      [&](int index) {
        avout::Client client(options());
        auto agent = client.agent<Log>(name, {});
        // The last digit records the process that ran the action.
        agent.define("append", [index](const Log& log, long item) {
          Log next = log;
          next.push_back(item * 10 + index);
          return next;
        });
        if (index == 0) {
          // Holds the head until every process has queued all its sends behind it.
          agent.send([&](Log log) {
            for (int p = 0; p < processes; ++p) {
              if (!wait_for_file(directory / ("sent-" + std::to_string(p)), scaled(60s))) {
                throw std::runtime_error("the senders never finished");
              }
            }
            log.push_back(slow_id);
            return log;
          });
          std::ofstream(directory / "held") << 1;
        } else if (!wait_for_file(directory / "held", scaled(60s))) {
          throw std::runtime_error("the slow action was never sent");
        }
        for (int i = 0; i < rounds; ++i) {
          const long item = index * 1000L + 2 * i;
          agent.send("append", item);
          client.dosync([&] { agent.send("append", item + 1); });
        }
        std::ofstream(directory / ("sent-" + std::to_string(index))) << 1;
        agent.await(scaled(60s));
      },
      scaled(120s));
  std::filesystem::remove_all(directory);
  REQUIRE(codes == std::vector<int>(processes, 0));

  avout::Client client(options());
  const Log log = client.agent<Log>(name, {}).deref();
  REQUIRE(log.size() == 1 + processes * rounds * 2);
  CHECK(log.front() == slow_id);
  std::map<long, std::size_t> position;
  int run_by_another = 0;
  for (std::size_t i = 1; i < log.size(); ++i) {
    const long item = log[i] / 10;
    position[item] = i;
    if (log[i] % 10 != item / 1000) ++run_by_another;
  }
  CHECK(position.size() == log.size() - 1);  // each action ran exactly once
  for (long sender = 0; sender < processes; ++sender) {
    for (long i = 1; i < rounds * 2; ++i) {
      CHECK(position.at(sender * 1000 + i - 1) < position.at(sender * 1000 + i));
    }
  }
  // Behind the slow action the queue holds every process's sends, interleaved or not: the
  // batch that runs first after it runs another process's sends too.
  MESSAGE(run_by_another << " of " << log.size() - 1 << " actions ran in another process");
  CHECK(run_by_another > 0);
}

TEST_CASE(
    "sending a name the handle never defined throws UndefinedAction, and arguments that "
    "do not fit the action throw CodecError; neither sends anything") {
  avout::Client client(options());
  const std::string name = unique_name("undefined");
  auto agent = client.agent<long>(name, 1);
  agent.define("add", [](long value, long amount) { return value + amount; });
  CHECK_THROWS_AS(agent.send("deposit", 5L), avout::UndefinedAction);
  CHECK_THROWS_AS(agent.send_off("deposit", 5L), avout::UndefinedAction);
  CHECK_THROWS_AS(agent.send("add", std::string("five")), avout::CodecError);
  CHECK(client.session().children(avout::inspect::agent_queue_path(client, name)).empty());
  agent.send("add", 4);  // an int fits a long
  REQUIRE(agent.await_for(scaled(30s)));
  CHECK(agent.deref() == 5);
}

TEST_CASE(
    "a named action that throws fails the agent as a closure would: the actions before "
    "it stay, those after it are dropped, sends are refused until restart") {
  avout::Client client(options());
  auto agent = client.agent<Log>(unique_name("failing"), {});
  agent.define("append", [](Log log, long item) {
    log.push_back(item);
    return log;
  });
  agent.define("fail",
               [](const Log&, const std::string& why) -> Log { throw std::runtime_error(why); });
  std::atomic<bool> release{false};
  agent.send([&release](Log log) {
    while (!release) std::this_thread::sleep_for(5ms);  // the sends below queue behind it
    log.push_back(0);
    return log;
  });
  agent.send("append", 1L);
  agent.send("append", 2L);
  agent.send("fail", std::string("named action 3 fails"));
  agent.send("append", 4L);
  release = true;
  // 4 was dropped unrun: await says so, with the agent's error.
  CHECK_THROWS_WITH_AS(agent.await_for(scaled(30s)), doctest::Contains("named action 3 fails"),
                       avout::AgentFailed);
  REQUIRE(agent.error());
  CHECK(agent.error()->find("named action 3 fails") != std::string::npos);
  CHECK(agent.deref() == Log{0, 1, 2});
  CHECK_THROWS_AS(agent.send("append", 5L), avout::AgentFailed);
  agent.restart(Log{7});
  agent.send("append", 8L);
  REQUIRE(agent.await_for(scaled(30s)));
  CHECK(agent.deref() == Log{7, 8});
}

TEST_CASE("a process learns from one listing that another process's batch ran all its sends") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("settled");
  avout::Client runner(options());
  avout::Client sender(options());
  auto by_runner = runner.agent<long>(name, 0);
  auto by_sender = sender.agent<long>(name, 0);
  for (auto* agent : {&by_runner, &by_sender})
    agent->define("add", [](long v, long d) { return v + d; });
  // The runner's agent workers are all kept busy, so its first send waits in the queue
  // until the sender's have all been made behind it; then its batch runs them all.
  const unsigned workers = std::max(2u, std::thread::hardware_concurrency());
  std::promise<void> gate;
  const std::shared_future<void> opened = gate.get_future().share();
  std::atomic<unsigned> busy{0};
  std::vector<avout::Agent<long>> blockers;
  for (unsigned i = 0; i < workers; ++i) {
    blockers.push_back(runner.agent<long>(unique_name("blocker"), 0));
    blockers.back().send([&busy, opened](long v) {
      ++busy;
      (void)opened.wait_for(scaled(30s));
      return v;
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + scaled(10s);
  while (busy < workers && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  REQUIRE(busy == workers);
  by_runner.send("add", 1000L);
  constexpr int sends = 50;
  for (int i = 0; i < sends; ++i) by_sender.send("add", 1L);
  std::this_thread::sleep_for(200ms);  // the sender's worker is waiting on the runner's send
  const auto before = sender.session().statistics().requests;
  gate.set_value();
  REQUIRE(by_sender.await_for(scaled(30s)));
  const auto after = sender.session().statistics().requests;
  REQUIRE(by_runner.await_for(scaled(30s)));
  CHECK(by_runner.deref() == 1000 + sends);
  // A listing or two, not one (with a watch) for each of its sends.
  CHECK(after - before <= 6);
}

TEST_CASE("named sends of two clients, half with 1 KB arguments, each run once") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("large");
  avout::Client first(options());
  avout::Client second(options());
  auto by_first = first.agent<std::string>(name, "");
  auto by_second = second.agent<std::string>(name, "");
  const auto append = [](std::string text, std::string more) { return text + more; };
  by_first.define("append", append);
  by_second.define("append", append);
  const std::string large(1000, 'x');
  // Sent by both, each run by whichever client drives the queue at the time.
  for (int i = 0; i < 5; ++i) {
    by_first.send("append", std::string("a"));
    by_second.send("append", large);
  }
  REQUIRE(by_first.await_for(scaled(30s)));
  REQUIRE(by_second.await_for(scaled(30s)));
  const std::string value = by_first.deref();
  CHECK(value.size() == 5 * (1 + large.size()));
  CHECK(std::count(value.begin(), value.end(), 'a') == 5);
}

TEST_CASE(
    "a named send whose node would not fit one ZooKeeper request throws ValueTooLarge at "
    "once and sends nothing, in dosync and in an action too") {
  avout::Client client(options());
  const std::string name = unique_name("too-large");
  auto agent = client.agent<long>(name, 0);
  agent.define("length", [](long, std::string text) { return static_cast<long>(text.size()); });
  const std::string too_large(1100000, 'z');  // over jute.maxbuffer's 1 MB

  const auto started = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(agent.send("length", too_large), avout::ValueTooLarge);
  CHECK_THROWS_AS(agent.send_off("length", too_large), avout::ValueTooLarge);
  CHECK_THROWS_AS(client.dosync([&] { agent.send("length", too_large); }), avout::ValueTooLarge);
  // Well under a session timeout: before, the server dropped the connection over the request
  // and the send was retried until ZooKeeper counted as unreachable (ConnectionLoss).
  CHECK(std::chrono::steady_clock::now() - started < scaled(1500ms));
  CHECK(client.session().children(avout::inspect::agent_queue_path(client, name)).empty());

  // Made by an action, it fails that action (and so the agent), never vanishing silently.
  auto sender = client.agent<long>(unique_name("too-large-sender"), 0);
  sender.send([&](long value) {
    agent.send("length", too_large);
    return value + 1;
  });
  REQUIRE(sender.await_for(scaled(30s)));
  REQUIRE(sender.error().has_value());
  CHECK_MESSAGE(sender.error()->find("ZooKeeper accepts in one request") != std::string::npos,
                *sender.error());
  CHECK(sender.deref() == 0);

  const std::string fits(900000, 'y');
  agent.send("length", fits);
  REQUIRE(agent.await_for(scaled(30s)));
  CHECK(agent.deref() == 900000);
  CHECK_FALSE(agent.error().has_value());
}

TEST_CASE(
    "named sends made at once whose nodes together would not fit one request each run "
    "once") {
  // Such a multi made the server drop the connection (the sends went through on a retry).
  // Declared before the client, whose listener counts into it until the client is gone.
  std::atomic<int> disconnects{0};
  avout::Client client(options());
  const std::string name = unique_name("large-together");
  auto agent = client.agent<long>(name, 0);
  agent.define("add_length",
               [](long value, std::string text) { return value + static_cast<long>(text.size()); });
  // Four threads sending 400 KB each at the same moment: the sends that wait for one create
  // share the next multi, which must stay under the 1 MB a request may take.
  constexpr int threads = 4;
  constexpr int sends = 3;
  const std::string text(400000, 'q');
  const auto listener = client.session().add_listener([&](avout::SessionState state) {
    if (state == avout::SessionState::disconnected) ++disconnects;
  });
  std::vector<std::future<void>> senders;
  std::atomic<int> ready{0};
  for (int t = 0; t < threads; ++t) {
    senders.push_back(std::async(std::launch::async, [&] {
      ++ready;
      while (ready.load() < threads) std::this_thread::yield();
      for (int i = 0; i < sends; ++i) agent.send("add_length", text);
    }));
  }
  for (auto& sender : senders) CHECK_NOTHROW(sender.get());
  REQUIRE(agent.await_for(scaled(60s)));
  CHECK(agent.deref() == static_cast<long>(threads * sends * text.size()));
  CHECK_FALSE(agent.error().has_value());
  CHECK(disconnects.load() == 0);
  client.session().remove_listener(listener);
}
