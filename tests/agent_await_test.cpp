// What await waits for and what it says: the sends made before the call (not those other
// threads keep making meanwhile), and AgentFailed when a failed agent dropped some unrun.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <stop_token>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 4000ms};
}

long plus_one(long value) { return value + 1; }

}  // namespace

TEST_CASE(
    "await with a stop token returns once the sends made before it ran, while other "
    "threads keep sending") {
  avout::Client client(options());
  auto agent = client.agent<long>(avout::testing::unique_name("/agent-await-test", "stream"), 0);
  std::atomic<bool> stop{false};
  auto keep_sending = [&] {
    while (!stop) {
      agent.send([](long value) {
        std::this_thread::sleep_for(5ms);  // slower than the sends: the queue keeps growing
        return value + 1;
      });
    }
  };
  std::jthread sender(keep_sending);
  std::jthread other_sender(keep_sending);
  std::this_thread::sleep_for(200ms);
  agent.send(plus_one);
  std::stop_source never;
  auto waited = std::async(std::launch::async, [&] {
    agent.await(avout::Deadline(never.get_token()));
    return true;
  });
  const bool returned = waited.wait_for(scaled(10s)) == std::future_status::ready;
  stop = true;
  sender.join();
  other_sender.join();
  if (!returned) never.request_stop();  // lets the test end: await throws Timeout then
  CHECK(returned);
  try {
    (void)waited.get();
  } catch (const avout::Timeout&) {
  }
  CHECK(agent.await_for(scaled(60s)));
}

TEST_CASE(
    "await after a failed agent dropped some of the awaited actions unrun throws "
    "AgentFailed with the agent's error") {
  avout::Client client(options());
  auto agent = client.agent<long>(avout::testing::unique_name("/agent-await-test", "failed"), 0);
  std::atomic<bool> release{false};
  agent.send([&release](long value) {
    while (!release) std::this_thread::sleep_for(2ms);  // the sends below queue behind it
    return value + 1;
  });
  agent.send([](long) -> long { throw std::runtime_error("broken on purpose"); });
  agent.send(plus_one);  // dropped unrun: the agent failed before it
  agent.send(plus_one);
  release = true;
  CHECK_THROWS_WITH_AS(agent.await(avout::Deadline::after(scaled(30s))),
                       doctest::Contains("broken on purpose"), avout::AgentFailed);
  CHECK(agent.deref() == 1);
  REQUIRE(agent.error());
  // Reported once: nothing awaited since was dropped.
  agent.restart(5);
  agent.send(plus_one);
  CHECK(agent.await_for(scaled(30s)));
  CHECK(agent.deref() == 6);
}
