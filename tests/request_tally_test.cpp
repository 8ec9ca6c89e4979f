// The request tally avout-bench reads (core/src/zk/request_tally.hpp): every request a session
// sends counts once under its kind, the exists a persistent watch re-arms with under `rearm`,
// and a multi the server refuses for a failing operation under multis_failed.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "zk/request_tally.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

using namespace std::chrono_literals;
using avout::detail::RequestKind;

namespace {

// How many requests of `kind` the tally counted between `before` and `after`.
std::uint64_t sent(const avout::detail::RequestTally& before,
                   const avout::detail::RequestTally& after, RequestKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  return after.sent[i] - before.sent[i];
}

}  // namespace

TEST_CASE("each request a session sends counts once under its kind, failed multis apart") {
  avout::testing::start_shared_servers();
  avout::ZooKeeperSession session(
      avout::SessionOptions{.hosts = avout::testing::shared_zookeeper().connect_string()});
  const std::string base = avout::testing::unique_name("/request-tally-test", "kinds");
  session.create_recursive(base);
  const auto before = avout::detail::request_tally();
  const auto requests_before = session.statistics().requests;
  session.create(base + "/node", {});
  (void)session.get(base + "/node");
  (void)session.exists(base + "/node");
  session.set(base + "/node", {1});
  (void)session.children(base);
  session.sync(base);
  CHECK(session.multi({avout::op::Check{base + "/node", 1}}).committed);
  CHECK_FALSE(session.multi({avout::op::Check{base + "/node", 0}}).committed);
  session.remove(base + "/node");
  const auto after = avout::detail::request_tally();
  // Other threads of this process may send too: at least ours, and the session's own count
  // says how many it sent.
  for (const auto kind :
       {RequestKind::create, RequestKind::get, RequestKind::exists, RequestKind::set,
        RequestKind::children, RequestKind::sync, RequestKind::remove}) {
    CHECK(sent(before, after, kind) >= 1);
  }
  CHECK(sent(before, after, RequestKind::multi) >= 2);
  CHECK(after.multis_failed - before.multis_failed >= 1);
  CHECK(session.statistics().requests - requests_before == 9);
}

TEST_CASE("a persistent watch re-arming itself counts as a rearm") {
  avout::testing::start_shared_servers();
  avout::ZooKeeperSession session(
      avout::SessionOptions{.hosts = avout::testing::shared_zookeeper().connect_string()});
  const std::string path = avout::testing::unique_name("/request-tally-test", "rearm");
  session.create_recursive(path);
  std::atomic<int> events{0};
  const auto before = avout::detail::request_tally();
  auto watch = session.watch_persistently(path, [&](const avout::WatchEvent&) { ++events; });
  session.set(path, {1});
  const auto deadline = std::chrono::steady_clock::now() + avout::testing::scaled(10s);
  while (events.load() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  REQUIRE(events.load() >= 1);
  // The first arm and the one after the event.
  CHECK(sent(before, avout::detail::request_tally(), RequestKind::rearm) >= 2);
}
