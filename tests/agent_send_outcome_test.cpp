// What a send that gives up promises: Timeout means the action will not run; a named send
// whose create may have landed (another process may run it at once) says OutcomeUnknown.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <random>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 4000ms};
}

// What the sends of one thread came to.
struct Outcomes {
  std::atomic<long> returned{0};  // the action runs once
  std::atomic<long> timeouts{0};  // the action never runs
  std::atomic<long> unknown{0};   // OutcomeUnknown: it runs once or never
};

}  // namespace

TEST_CASE(
    "named sends, 300 without a deadline and 2 x 600 with deadlines of 50-750 us: a send that "
    "threw Timeout never runs, one "
    "that returned runs once, OutcomeUnknown runs at most once") {
  avout::Client client(options());
  auto agent =
      client.agent<long>(avout::testing::unique_name("/agent-send-outcome-test", "plus"), 0);
  agent.define("plus", [](long value, long step) { return value + step; });
  Outcomes patient;
  Outcomes hurried;
  std::jthread without_deadline([&] {
    for (int i = 0; i < 300; ++i) {
      agent.send("plus", 1L);
      ++patient.returned;
    }
  });
  auto hurry = [&](unsigned seed) {
    std::mt19937 random(seed);
    std::uniform_int_distribution<int> micros(50, 750);
    for (int i = 0; i < 600; ++i) {
      try {
        agent.send(avout::Deadline::after(std::chrono::microseconds(micros(random))), "plus", 1L);
        ++hurried.returned;
      } catch (const avout::OutcomeUnknown&) {
        ++hurried.unknown;
      } catch (const avout::Timeout&) {
        ++hurried.timeouts;
      }
    }
  };
  std::jthread with_deadline(hurry, 35U);
  std::jthread with_deadline_too(hurry, 36U);
  without_deadline.join();
  with_deadline.join();
  with_deadline_too.join();
  // A send made now comes after every node those sends left: once it ran, they are settled.
  agent.send("plus", 1000000L);
  REQUIRE(agent.await_for(scaled(60s)));
  const long ran = agent.deref() - 1000000;
  const long at_least = patient.returned + hurried.returned;
  const long timeouts = hurried.timeouts;
  const long unknown = hurried.unknown;
  CAPTURE(at_least);
  CAPTURE(timeouts);
  CAPTURE(unknown);
  CHECK(ran >= at_least);
  CHECK(ran <= at_least + unknown);
}
