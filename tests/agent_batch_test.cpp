// Agents apply the actions queued behind one another in batches: one commit, one move of the
// head, for a run of one process's sends, with each action still applied once and in order.
#include <avout/avout.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using avout::testing::scaled;
using avout::testing::wait_for_file;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/agent-batch-test", stem);
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 2000ms};
}

using Log = std::vector<long>;

Log append(Log log, long value) {
  log.push_back(value);
  return log;
}

}  // namespace

TEST_CASE(
    "4 processes x 3 threads queued behind a slow action: each action runs once, in "
    "order, and fewer commits than actions move the head") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("queued");
  constexpr int processes = 4;
  constexpr int threads = 3;
  constexpr int rounds = 4;  // per thread: one send, then a dosync sending two
  constexpr long slow_id = 999999;
  const auto directory = std::filesystem::temp_directory_path() /
                         ("avout-agent-batch-" + name.substr(name.rfind('-') + 1));
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
        std::vector<std::thread> senders;
        for (int t = 0; t < threads; ++t) {
          senders.emplace_back([&, t] {
            const long base = (index * threads + t) * 1000L;
            for (int i = 0; i < rounds; ++i) {
              agent.send(append, base + 3 * i);
              // Created in one multi: consecutive in the queue, so one batch at the least.
              client.dosync([&] {
                agent.send(append, base + 3 * i + 1);
                agent.send(append, base + 3 * i + 2);
              });
            }
          });
        }
        for (auto& sender : senders) sender.join();
        std::ofstream(directory / ("sent-" + std::to_string(index))) << 1;
        agent.await(scaled(60s));
      },
      scaled(120s));
  std::filesystem::remove_all(directory);
  REQUIRE(codes == std::vector<int>(processes, 0));

  avout::Client client(options());
  const Log log = client.agent<Log>(name, {}).deref();
  constexpr std::size_t actions = 1 + processes * threads * rounds * 3;
  REQUIRE(log.size() == actions);
  CHECK(log.front() == slow_id);
  std::map<long, std::size_t> position;
  for (std::size_t i = 0; i < log.size(); ++i) position[log[i]] = i;
  CHECK(position.size() == log.size());  // each action ran exactly once
  for (int sender = 0; sender < processes * threads; ++sender) {
    for (int i = 1; i < rounds * 3; ++i) {
      CHECK(position.at(sender * 1000L + i - 1) < position.at(sender * 1000L + i));
    }
  }
  // Every commit that applied actions set the head once: fewer sets than actions means
  // several actions went in one commit.
  const auto head = client.session().exists(client.options().root + "/agents/heads" + name);
  REQUIRE(head);
  MESSAGE("the head moved " << head->version << " times for " << actions << " actions");
  CHECK(head->version > 0);
  CHECK(static_cast<std::size_t>(head->version) < actions);
}

TEST_CASE(
    "an action that throws inside a batch keeps the actions before it and drops those "
    "after it") {
  avout::Client client(options());
  auto agent = client.agent<Log>(unique_name("failing"), {});
  std::atomic<bool> release{false};
  agent.send([&release](Log log) {
    while (!release) std::this_thread::sleep_for(5ms);  // the sends below queue behind it
    log.push_back(0);
    return log;
  });
  agent.send(append, 1);
  agent.send(append, 2);
  agent.send([](Log) -> Log { throw std::runtime_error("action 3 fails"); });
  agent.send(append, 4);
  agent.send(append, 5);
  release = true;
  // 4 and 5 were dropped unrun: await says so, with the agent's error.
  CHECK_THROWS_WITH_AS(agent.await_for(scaled(30s)), doctest::Contains("action 3 fails"),
                       avout::AgentFailed);
  REQUIRE(agent.error());
  CHECK(agent.error()->find("action 3 fails") != std::string::npos);
  CHECK(agent.deref() == Log{0, 1, 2});
  // One at a time they would set the head four times (0, 1, 2, the failure). Batched: the
  // slow action's commit (with whichever sends had queued when it began) and one for the rest.
  const auto head = client.session().exists(client.options().root + "/agents/heads" + agent.name());
  REQUIRE(head);
  CHECK(head->version <= 2);
}
