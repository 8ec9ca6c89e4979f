// Multis racing a session expiry: ZooKeeper's C client must never be handed one on an expired
// handle. A fault test: three threads send as fast as they can while the session is expired,
// which a sanitizer build slows past the expiry's own deadlines.
#include <avout/errors.hpp>
#include <avout/zookeeper_session.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_path(const std::string& stem) {
  return avout::testing::unique_name("/session-fault-test", stem);
}

}  // namespace

// ZooKeeper's C client (3.8) refuses every operation of a multi once its handle has expired,
// and then frees a stale path for each operation after the first: a multi sent on a handle
// between its expiry and the session's renewal must fail typed, never reach that code.
TEST_CASE("multis sent while the session expires fail with typed errors and corrupt nothing") {
  avout::ZooKeeperSession session(
      avout::SessionOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                            .session_timeout = 4000ms,
                            .connect_timeout = scaled(10000ms)});
  const std::string base = unique_path("expiring-multi");
  std::vector<avout::Operation> checks;
  for (int i = 0; i < 6; ++i) {
    const std::string path = base + "/n" + std::to_string(i);
    session.create_recursive(path);
    checks.push_back(avout::op::Check{path, -1});
  }
  const auto old_generation = session.generation();
  std::atomic<int> applied{0}, refused{0}, unexpected{0};
  bool renewed_session_takes_multis = false;
  {
    // jthreads: stopped and joined on every path, also when the expiry below throws.
    std::vector<std::jthread> senders;
    for (int t = 0; t < 3; ++t) {
      senders.emplace_back([&](std::stop_token stop) {
        while (!stop.stop_requested()) {
          try {
            session.multi(checks);
            ++applied;
          } catch (const avout::SessionExpired&) {
            ++refused;
          } catch (const avout::ConnectionLoss&) {
            ++refused;
          } catch (...) {
            ++unexpected;
          }
        }
      });
    }
    session.expire_for_testing();
    const auto deadline = std::chrono::steady_clock::now() + scaled(20s);
    while (session.generation() == old_generation && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(10ms);
    }
    const int applied_before = applied.load();
    const auto settle = std::chrono::steady_clock::now() + scaled(5s);
    while (applied.load() == applied_before && std::chrono::steady_clock::now() < settle) {
      std::this_thread::sleep_for(10ms);
    }
    renewed_session_takes_multis = applied.load() > applied_before;
  }
  REQUIRE(session.generation() == old_generation + 1);
  CHECK(renewed_session_takes_multis);
  CHECK(unexpected.load() == 0);
  MESSAGE("multis applied: " << applied.load()
                             << ", refused around the expiry: " << refused.load());
}
