// A commit multi names points written for one session: gc may erase them once that session is
// gone, so the multi goes out on that session or not at all (docs/transactions.md rule 2).
// The session sends a multi only while the generation it was prepared on is still its own,
// checked in one step with the choice of the handle a renewal swaps.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

avout::SessionOptions options() {
  return avout::SessionOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                               .session_timeout = 6000ms};
}

}  // namespace

TEST_CASE(
    "a multi prepared on a session that has since been renewed is refused and nothing is sent") {
  avout::testing::start_shared_servers();
  avout::ZooKeeperSession session(options());
  const std::string base = avout::testing::unique_name("/session-generation-test", "renewed");
  session.create_recursive(base);
  const auto prepared_on = session.generation();
  CHECK(session
            .multi({avout::op::Create{base + "/before", {}, avout::CreateMode::persistent}},
                   prepared_on)
            .committed);

  session.expire_for_testing();  // returns once the expiry is seen, the renewal under way
  // While renewing and once renewed: never on the new session.
  const auto requests = session.statistics().requests;
  CHECK_THROWS_AS(
      session.multi({avout::op::Create{base + "/expired", {}, avout::CreateMode::persistent}},
                    prepared_on),
      avout::SessionExpired);
  const auto deadline = std::chrono::steady_clock::now() + scaled(20s);
  while (session.generation() == prepared_on && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  REQUIRE(session.generation() == prepared_on + 1);
  CHECK_THROWS_AS(
      session.multi_async({avout::op::Create{base + "/renewed", {}, avout::CreateMode::persistent}},
                          prepared_on),
      avout::SessionExpired);
  CHECK(session.statistics().requests == requests);
  CHECK_FALSE(session.exists(base + "/expired").has_value());
  CHECK_FALSE(session.exists(base + "/renewed").has_value());
  // The new generation's multis go out as usual.
  CHECK(session
            .multi({avout::op::Create{base + "/after", {}, avout::CreateMode::persistent}},
                   session.generation())
            .committed);
}
