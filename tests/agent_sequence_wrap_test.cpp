// Agents across the wrap of ZooKeeper's sequential counter: a send node's suffix is its queue
// folder's signed 32-bit child counter, which goes from 2147483647 to -2147483648 after 2^31
// changes of the folder's children (item 10 of issue 35). The injector
// (support/zookeeper_faults.hpp, CounterOffset) shows the counter near that point, so the
// wrap comes after a few sends instead of weeks of them.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/agent-sequence-wrap", stem);
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 4000ms};
}

using Log = std::vector<long>;

Log append(Log log, long value) {
  log.push_back(value);
  return log;
}

}  // namespace

TEST_CASE(
    "sends of several threads and two clients across the sequence counter's wrap each run once, in "
    "order") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("order");
  // Each send's create and its removal move the counter by one each: with 2 x 2 x 25 sends
  // the queue's suffixes pass 2147483647, -2147483648 and the short negatives -000000009...
  avout::testing::CounterOffset wrap(name, (std::int64_t{1} << 31) - 30);
  avout::Client first(options()), second(options());
  auto first_agent = first.agent<Log>(name, {});
  auto second_agent = second.agent<Log>(name, {});
  constexpr int clients = 2, threads = 2, sends = 25;
  std::atomic<int> negative_seen{0};
  std::atomic<bool> sending{true};
  std::thread watcher([&] {
    const auto queue = avout::inspect::agent_queue_path(first, name);
    while (sending) {
      try {
        for (const auto& node : first.session().children(queue)) {
          if (node.find("--") != std::string::npos) ++negative_seen;  // "s-<tag>-" then "-…"
        }
      } catch (const avout::Error&) {
      }
      std::this_thread::sleep_for(1ms);
    }
  });
  std::vector<std::thread> senders;
  for (int c = 0; c < clients; ++c) {
    for (int t = 0; t < threads; ++t) {
      senders.emplace_back([&, c, t] {
        auto& agent = c == 0 ? first_agent : second_agent;
        for (int i = 0; i < sends; ++i) agent.send(append, (c * threads + t) * 1000L + i);
      });
    }
  }
  for (auto& sender : senders) sender.join();
  const bool first_done = first_agent.await_for(scaled(20s));
  const bool second_done = second_agent.await_for(scaled(20s));
  sending = false;
  watcher.join();
  CHECK(first_done);
  CHECK(second_done);
  const Log log = second_agent.deref();
  CHECK(log.size() == clients * threads * sends);
  CHECK(std::set<long>(log.begin(), log.end()).size() == log.size());
  std::vector<long> last(clients * threads, -1);
  bool in_order = true;
  for (const long id : log) {
    auto& previous = last[static_cast<std::size_t>(id / 1000)];
    in_order = in_order && id % 1000 > previous;
    previous = id % 1000;
  }
  CHECK(in_order);
  CHECK(negative_seen > 0);  // the injector did show the wrap
  CHECK(first.session().children(avout::inspect::agent_queue_path(first, name)).empty());
}
