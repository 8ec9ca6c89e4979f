// The one "did my request land?" module (core/src/zk/outcome.hpp) against a real ZooKeeper:
// it answers landed or not landed only from a read made after a sync, takes no silence (a
// failed sync or read, an unreachable server) for "absent", and gives up with Timeout at one
// deadline: the caller's, cut short by the thread's ReplyDeadline.
#include <avout/errors.hpp>
#include <avout/zookeeper_session.hpp>

#include "support/servers.hpp"
#include "support/tcp_relay.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"
#include "zk/outcome.hpp"

#include <doctest/doctest.h>

#include <future>
#include <random>
#include <stop_token>
#include <thread>

using namespace std::chrono_literals;
using avout::Deadline;
using avout::detail::Outcome;
using avout::testing::scaled;

namespace {

avout::SessionOptions options_for(const std::string& hosts) {
  return avout::SessionOptions{
      .hosts = hosts, .session_timeout = 4000ms, .connect_timeout = scaled(10000ms)};
}

avout::SessionOptions options() {
  return options_for(avout::testing::shared_zookeeper().connect_string());
}

std::string unique_path(const std::string& stem) {
  return avout::testing::unique_name("/outcome-test", stem);
}

Deadline soon() { return Deadline::after(scaled(20s)); }

}  // namespace

TEST_CASE("a node that is there landed; one that is not did not") {
  avout::ZooKeeperSession session(options());
  const auto folder = unique_path("plain");
  session.create_recursive(folder + "/made");
  CHECK(avout::detail::node_outcome(session, folder + "/made", soon(), "made") == Outcome::landed);
  CHECK(avout::detail::node_outcome(session, folder + "/never", soon(), "never") ==
        Outcome::not_landed);
  const auto child =
      session.create(folder + "/x-id1-", {}, avout::CreateMode::persistent_sequential);
  CHECK(avout::detail::child_outcome(session, folder, "x-id1-", soon(), "x") == child);
  CHECK_FALSE(avout::detail::child_outcome(session, folder, "x-id2-", soon(), "x").has_value());
}

TEST_CASE("a failed sync or read is no answer: asked again until one comes") {
  (void)avout::testing::shared_zookeeper();
  avout::ZooKeeperSession session(options());
  const auto folder = unique_path("silence");
  session.create_recursive(folder + "/made");
  avout::testing::fail_next(avout::testing::ZooKeeperCall::sync, folder, 2);
  avout::testing::fail_next(avout::testing::ZooKeeperCall::exists, folder, 1);
  CHECK(avout::detail::node_outcome(session, folder + "/never", soon(), "never") ==
        Outcome::not_landed);
  CHECK(avout::testing::failures_to_come() == 0);
  avout::testing::fail_next(avout::testing::ZooKeeperCall::children, folder, 2);
  CHECK(avout::detail::child_outcome(session, folder, "made", soon(), "made").has_value());
  CHECK(avout::testing::failures_to_come() == 0);
}

TEST_CASE("a write whose reply was lost is found landed once the server answers again") {
  auto& zookeeper = avout::testing::shared_zookeeper();
  avout::testing::TcpRelay relay(zookeeper.port());
  avout::ZooKeeperSession session(options_for(relay.connect_string()));
  const auto folder = unique_path("lost-reply");
  session.create_recursive(folder);
  relay.lose_replies();  // the create lands, its reply never comes
  auto created = session.create_async(folder + "/node", {}, avout::CreateMode::persistent);
  auto asked = std::async(std::launch::async, [&] {
    return avout::detail::node_outcome(session, folder + "/node", soon(), "node");
  });
  CHECK(asked.wait_for(300ms) == std::future_status::timeout);  // silence is no answer
  relay.cut();  // the link comes back on the same session
  CHECK(asked.get() == Outcome::landed);
  CHECK_THROWS_AS(created.get(), avout::ConnectionLoss);
}

TEST_CASE("while the server is unreachable the question ends at the deadline with Timeout") {
  auto& zookeeper = avout::testing::shared_zookeeper();
  avout::testing::TcpRelay relay(zookeeper.port());
  avout::ZooKeeperSession session(options_for(relay.connect_string()));
  const auto node = unique_path("unreachable");
  session.create_recursive(node);
  relay.isolate();  // open and later connections drop both sides' bytes
  const auto started = std::chrono::steady_clock::now();
  try {
    (void)avout::detail::node_outcome(session, node, Deadline::after(300ms), "the node");
    FAIL("answered while the server was unreachable");
  } catch (const avout::Timeout& timeout) {
    CHECK(std::string(timeout.what()) == "the node: deadline passed");
  }
  CHECK(std::chrono::steady_clock::now() - started >= 300ms);  // not given up before it
  SUBCASE("the thread's ReplyDeadline bounds an unbounded caller") {
    const avout::detail::ReplyDeadline bound(Deadline::after(300ms));
    CHECK_THROWS_AS(avout::detail::node_outcome(session, node, Deadline{}, "the node"),
                    avout::Timeout);
  }
  SUBCASE("a stop request ends it") {
    std::stop_source stop;
    auto asked = std::async(std::launch::async, [&] {
      return avout::detail::node_outcome(session, node, Deadline(stop.get_token()), "the node");
    });
    std::this_thread::sleep_for(100ms);
    stop.request_stop();
    try {
      (void)asked.get();
      FAIL("answered while the server was unreachable");
    } catch (const avout::Timeout& timeout) {
      CHECK(std::string(timeout.what()) == "the node: cancelled");
    }
  }
  relay.cut();  // a fresh connection: the session answers again
  CHECK(avout::detail::node_outcome(session, node, soon(), "the node") == Outcome::landed);
}
