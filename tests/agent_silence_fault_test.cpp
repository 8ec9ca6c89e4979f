// Agents while ZooKeeper stays silent longer than three session timeouts (item 6 of issue
// 35): elapsed time alone never proves a send node absent, since ZooKeeper restarts session
// timers when a leader returns and the session (and its nodes) may live on. Here the session
// lives while the injector makes the requests that would find the node fail.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <stop_token>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/agent-silence-test", stem);
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 2000ms};
}

// How many 100 ms rounds of failed lookups outlast three of the session's timeouts, by 3 s.
int rounds_past_three_timeouts(avout::Client& client) {
  return static_cast<int>((client.session().negotiated_timeout() * 3 + 3s) / 100ms);
}

bool queue_empty_within(avout::Client& client, const std::string& name,
                        std::chrono::milliseconds wait) {
  const auto queue = avout::inspect::agent_queue_path(client, name);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (!client.session().children(queue).empty()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

}  // namespace

TEST_CASE(
    "a dosync's send whose commit ended in OutcomeUnknown, having landed, runs and never "
    "blocks the agent") {
  avout::Client client(options());
  const std::string name = unique_name("dosync-unknown");
  auto agent = client.agent<long>(name, 0);
  auto counter = client.ref<long>(unique_name("dosync-unknown-ref"), 0);
  // The commit multi lands with its reply lost; its marker cannot be looked up (every sync
  // before the lookup fails) until the dosync's deadline: OutcomeUnknown. The deadline is a
  // stop requested once the multi went out and a lookup failed, never earlier: a deadline
  // passing before the commit is sent is a Timeout that wrote nothing, not this case.
  const auto queue = avout::inspect::agent_queue_path(client, name);
  avout::testing::fail_next(avout::testing::ZooKeeperCall::multi, queue, 1, true);
  avout::testing::fail_next(avout::testing::ZooKeeperCall::sync,
                            avout::inspect::markers_path(client), 100);
  std::stop_source deadline;
  std::jthread stopper([&](const std::stop_token& test_over) {
    while (avout::testing::failures_to_come() > 99 && !test_over.stop_requested()) {
      std::this_thread::sleep_for(1ms);
    }
    deadline.request_stop();
  });
  bool unknown = false;
  try {
    client.dosync(avout::Deadline(deadline.get_token()), [&] {
      counter.alter([](long v) { return v + 1; });
      agent.send([](long v) { return v + 1; });
    });
  } catch (const avout::OutcomeUnknown&) {
    unknown = true;
  }
  REQUIRE(unknown);
  REQUIRE(counter.deref() == 1);  // it landed
  agent.send([](long v) { return v + 10; });
  CHECK(agent.await_for(scaled(20s)));
  CHECK(agent.deref() == 11);
  CHECK(queue_empty_within(client, name, scaled(10s)));
}

TEST_CASE(
    "a named send whose create reply is lost runs once when ZooKeeper stays silent past "
    "three session timeouts while the session lives") {
  avout::Client client(options());
  const std::string name = unique_name("lost-create");
  auto agent = client.agent<long>(name, 0);
  agent.define("add", [](long value, long amount) { return value + amount; });
  const auto queue = avout::inspect::agent_queue_path(client, name);
  // The create lands, its reply is lost; every lookup of the queue then fails for longer
  // than three session timeouts, with the session alive all along.
  avout::testing::fail_next(avout::testing::ZooKeeperCall::create, queue, 1, true);
  avout::testing::fail_next(avout::testing::ZooKeeperCall::sync, queue,
                            rounds_past_three_timeouts(client));
  agent.send("add", 1L);
  CHECK(agent.await_for(scaled(20s)));
  CHECK(agent.deref() == 1);
  CHECK(queue_empty_within(client, name, scaled(10s)));
}
