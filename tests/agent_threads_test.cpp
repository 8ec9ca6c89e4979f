// Agents sent to from several threads of one process: the order of the sends in ZooKeeper,
// not the order the threads got their replies in, decides which action runs next.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/agent-threads-test", stem);
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

// Each thread's values, in the order the log holds them, must be the order it sent them in.
bool each_thread_in_order(const Log& log, int threads) {
  std::vector<long> last(threads, -1);
  for (const long id : log) {
    const auto thread = static_cast<std::size_t>(id / 1000);
    if (id % 1000 <= last[thread]) return false;
    last[thread] = id % 1000;
  }
  return true;
}

}  // namespace

TEST_CASE("8 threads sharing one agent handle x 100 sends: all 800 actions run") {
  avout::Client client(options());
  auto agent = client.agent<Log>(unique_name("shared-handle"), {});
  constexpr int threads = 8;
  constexpr int sends = 100;
  std::vector<std::thread> senders;
  for (int t = 0; t < threads; ++t) {
    senders.emplace_back([&agent, t] {
      for (int i = 0; i < sends; ++i) agent.send(append, t * 1000L + i);
    });
  }
  for (auto& sender : senders) sender.join();
  REQUIRE(agent.await_for(scaled(30s)));
  const Log log = agent.deref();
  CHECK(log.size() == threads * sends);
  CHECK(each_thread_in_order(log, threads));
}

TEST_CASE("sends made by dosync on two threads of one process all run") {
  avout::Client client(options());
  auto agent = client.agent<Log>(unique_name("dosync-threads"), {});
  // One ref per thread: the transactions never conflict, so their commits overlap.
  constexpr int threads = 2;
  constexpr int sends = 100;
  std::vector<avout::Ref<long>> counters;
  for (int t = 0; t < threads; ++t) {
    counters.push_back(client.ref<long>(unique_name("dosync-threads-ref"), 0));
  }
  std::vector<std::thread> senders;
  for (int t = 0; t < threads; ++t) {
    senders.emplace_back([&, t] {
      for (int i = 0; i < sends; ++i) {
        client.dosync([&] {
          counters[t].alter([](long v) { return v + 1; });
          agent.send(append, t * 1000L + i);
        });
      }
    });
  }
  for (auto& sender : senders) sender.join();
  REQUIRE(agent.await_for(scaled(30s)));
  const Log log = agent.deref();
  CHECK(log.size() == threads * sends);
  CHECK(each_thread_in_order(log, threads));
  for (auto& counter : counters) CHECK(counter.deref() == sends);
}
