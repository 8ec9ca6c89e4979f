// The clock's version is ZooKeeper's int32: every commit of a deployment bumps it, so a long
// run reaches INT32_MAX, wraps to INT32_MIN and climbs back through -1 (docs/failure-model.md).
// A wrapped clock is only a clock: commits keep working. ZooKeeper cannot be made to hold the
// clock there without 2^31 commits, so these tests set this client's idea of the clock's
// version (the one a speculative commit checks) through a white-box hook.
#include <avout/avout.hpp>

#include "runtime/node_cache.hpp"
#include "runtime/runtime.hpp"
#include "stm/transaction.hpp"  // white-box: the client's idea of the clock, reached from a transaction

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <climits>
#include <cstdint>

using namespace std::chrono_literals;

namespace {

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 6000ms};
}

// Makes this client believe its last commit set the clock at `version`.
void pretend_clock_version(avout::Client& client, std::int32_t version) {
  client.dosync([&] {
    avout::detail::Transaction::current()->runtime().nodes().pretend_clock_version_for_testing(
        version);
  });
}

}  // namespace

TEST_CASE(
    "commits keep working whatever version the clock has reached, at ZooKeeper's last version and "
    "wrapped past it") {
  avout::testing::start_shared_servers();
  avout::Client client(options());
  auto counter = client.ref<long>(avout::testing::unique_name("/clock-version-test", "counter"), 0);
  client.dosync([&] { counter.alter([](long v) { return v + 1; }); });
  long expected = 1;
  for (const std::int32_t version :
       {INT32_MAX, INT32_MAX - 1, std::int32_t{-2}, INT32_MIN, INT32_MIN + 1}) {
    CAPTURE(version);
    for (int round = 0; round < 3; ++round) {
      pretend_clock_version(client, version);
      int runs = 0;
      CHECK_NOTHROW(client.dosync([&] {
        ++runs;
        counter.alter([](long v) { return v + 1; });
      }));
      ++expected;
      CHECK(runs <= 2);
    }
  }
  CHECK(counter.deref() == expected);
}
