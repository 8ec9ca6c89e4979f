// An atom compare-and-set whose reply is lost is applied exactly once, also when the lost
// command still reaches the server after the writer has read the cell back. A relay between
// the client and a real Redis holds back what one connection sends and delivers it later:
// a network delay, the way a command that timed out at the client can still run.
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "support/holding_relay.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/atom-lost-reply-test", stem);
}

}  // namespace

TEST_CASE("a Redis atom swap whose command arrives after its read-back is applied exactly once") {
  avout::testing::RedisServer redis;
  avout::testing::ZooKeeperServer zookeeper;
  avout::testing::HoldingRelay relay(redis.port());
  avout::Client client(avout::ClientOptions{.hosts = zookeeper.connect_string()});
  avout::redis::Store store(
      avout::redis::StoreOptions{.url = relay.url(), .command_timeout = 300ms});
  const std::string name = unique_name("counter");
  auto counter = client.atom<long>(name, 0, store);

  // The first call holds the compare-and-set that follows it on the wire: it times out, and
  // reaches Redis only when released. A call made after the writer decided "not landed"
  // releases it and waits until Redis has run it, so a wrong decision shows as a second +1.
  int calls = 0;
  const long stored = counter.swap([&](long value) {
    if (++calls == 1) {
      relay.hold();
    } else {
      relay.release();
      REQUIRE(relay.delivered(scaled(10s)));
    }
    return value + 1;
  });
  relay.release();
  REQUIRE(relay.delivered(scaled(10s)));

  avout::redis::Store direct(redis.url());
  CHECK(stored == 1);
  CHECK(client.atom<long>(name, 0, direct).deref() == 1);
  CHECK(calls == 1);
}
