// A lock node whose removal could not be sent at once (a handle destroyed while holding, a
// hold released while disconnected) is removed all the same: the removal is retried until it
// succeeds or the session is known gone, so no orphan node bars the lock while the session
// lives. The deletes are failed on purpose with the injector (support/zookeeper_faults.hpp).
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/tcp_relay.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;
using avout::testing::ZooKeeperCall;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/lock-removal", stem);
}

avout::ClientOptions options(const std::string& hosts) {
  return avout::ClientOptions{.hosts = hosts, .session_timeout = 4000ms};
}

}  // namespace

TEST_CASE("a held lock whose last handle goes is released even when the first delete fails") {
  auto& server = avout::testing::shared_zookeeper();
  avout::Client client(options(server.connect_string()));
  avout::Client other(options(server.connect_string()));
  const std::string name = unique_name("destroyed");
  const std::string writers = avout::inspect::lock_path(client, name) + "/writers";
  {
    auto lock = client.lock(name);
    lock.lock();
    avout::testing::fail_next(ZooKeeperCall::remove, writers, 2);
  }
  auto elsewhere = other.lock(name);
  const bool got = elsewhere.try_lock_for(scaled(8s));
  CHECK(got);
  if (got) elsewhere.unlock();
  CHECK(avout::testing::failures_to_come() == 0);
  CHECK(other.session().children(writers).empty());
}

TEST_CASE(
    "a hold released while disconnected is removed even when the deletes after the reconnect "
    "fail") {
  auto& server = avout::testing::shared_zookeeper();
  avout::testing::TcpRelay proxy(server.port());
  avout::Client client(options(proxy.connect_string()));
  avout::Client other(options(server.connect_string()));
  const std::string name = unique_name("disconnected");
  const std::string writers = avout::inspect::lock_path(other, name) + "/writers";
  auto lock = client.lock(name);
  lock.lock();
  proxy.set(avout::testing::TcpRelay::Mode::refuse);
  proxy.cut();
  lock.unlock();  // returns once the removal is left for the reconnect
  // The removals sent after the reconnect fail too (a second blip).
  avout::testing::fail_next(ZooKeeperCall::remove, writers, 3);
  proxy.set(avout::testing::TcpRelay::Mode::pass);
  auto elsewhere = other.lock(name);
  const bool got = elsewhere.try_lock_for(scaled(8s));
  CHECK(got);
  if (got) elsewhere.unlock();
  CHECK(avout::testing::failures_to_come() == 0);
  CHECK(other.session().children(writers).empty());
  // The same thread locks again at once: nothing of its own is left in line.
  const bool again = lock.try_lock_for(scaled(5s));
  CHECK(again);
  if (again) lock.unlock();
}
