// Lock waits ride out a request that fails with a connection loss while the connection stays
// up (no session event follows): they look again after a short pause instead of throwing
// ConnectionLoss or waiting for an event that never comes. One exact failure is injected
// with support/zookeeper_faults.hpp (fail_next).
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

using namespace std::chrono_literals;
using avout::testing::scaled;
using avout::testing::ZooKeeperCall;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/lock-loss", stem);
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 4000ms};
}

}  // namespace

TEST_CASE(
    "a soft writer whose second look at the readers fails after closing its gate still holds") {
  avout::Client client(options());
  const std::string name = unique_name("gate");
  const std::string folder = avout::inspect::lock_path(client, name, true);
  auto rw = client.read_write_lock(name, avout::WriterPolicy::soft);
  // The writer syncs the readers folder once while waiting for readers to leave, and once
  // more after closing its gate: fail that second one.
  avout::testing::fail_next(ZooKeeperCall::sync, folder + "/readers", 1, false, 1);
  bool held = false;
  CHECK_NOTHROW(held = rw.try_lock_for(scaled(10s)));
  CHECK(held);
  CHECK(avout::testing::failures_to_come() == 0);
  if (held) {
    CHECK(client.session().children(folder + "/gates").size() == 1);
    rw.unlock();
  }
  for (const char* kind : {"/writers", "/readers", "/gates"}) {
    INFO(kind);
    CHECK(client.session().children(folder + kind).empty());
  }
}

TEST_CASE(
    "a writer whose wait for readers to leave fails once without a disconnect takes the lock "
    "soon") {
  avout::Client client(options());
  const std::string name = unique_name("readers");
  const std::string folder = avout::inspect::lock_path(client, name, true);
  auto rw = client.read_write_lock(name, avout::WriterPolicy::hard);
  avout::testing::fail_next(ZooKeeperCall::sync, folder + "/readers", 1);
  const auto start = std::chrono::steady_clock::now();
  bool held = false;
  CHECK_NOTHROW(held = rw.try_lock_for(scaled(20s)));
  CHECK(held);
  // Not left waiting for a session event that never comes (until the deadline).
  CHECK(std::chrono::steady_clock::now() - start < scaled(10s));
  if (held) rw.unlock();
}
