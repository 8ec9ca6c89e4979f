// Typed outcomes of atom writes: a write that may have landed and could not be resolved is
// OutcomeUnknown (not a plain ConnectionLoss, which is safe to retry), and a value that was
// stored but could not be announced is CommittedWithError (the swap happened).
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "support/servers.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

using namespace std::chrono_literals;

namespace {

avout::testing::ZooKeeperServer& zookeeper() {
  static avout::testing::ZooKeeperServer server;
  return server;
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = zookeeper().connect_string(), .session_timeout = 4000ms};
}

}  // namespace

TEST_CASE("an atom swap whose reply is lost while ZooKeeper stays unreachable is OutcomeUnknown") {
  avout::Client client(options());
  auto counter = client.atom<long>("/atom-outcome/lost", 0);
  {
    // Every mutation is applied with its reply lost; every other request (the sync and the
    // read-backs of the resolution) fails: whether the write landed cannot be found out.
    avout::testing::FaultPlan plan(7, {.reply_lost = 1.0, .fail_early = 1.0},
                                   zookeeper().connect_string());
    avout::testing::FaultPlan::enable(false);
    bool thrown = false;
    try {
      counter.swap([](long value) {
        avout::testing::FaultPlan::enable(true);  // after the swap's read, before its write
        return value + 1;
      });
    } catch (const avout::OutcomeUnknown& error) {
      thrown = true;
      CHECK(std::string(error.what()).find("/atom-outcome/lost") != std::string::npos);
    }
    avout::testing::FaultPlan::enable(false);
    CHECK(thrown);
    CHECK(avout::testing::FaultPlan::counts().reply_lost == 1);
  }
  CHECK(counter.deref() == 1);  // it had landed: a blind retry would have made it 2
}

TEST_CASE("a stored atom value whose change notice cannot be sent is CommittedWithError") {
  avout::testing::RedisServer redis;
  avout::Client client(options());
  avout::redis::Store store(redis.url());
  auto counter = client.atom<long>("/atom-outcome/notice", 0, store);
  // The node that announces new values to other processes is gone.
  client.session().remove(client.options().root + "/atom-notices/atom-outcome/notice", -1);
  CHECK_THROWS_WITH_AS(counter.swap([](long value) { return value + 1; }),
                       doctest::Contains("is stored"), avout::CommittedWithError);
  CHECK(counter.deref() == 1);
}
