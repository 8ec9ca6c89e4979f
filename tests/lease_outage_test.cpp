// A store outage during a kept lease, for the ZooKeeper, Redis and PostgreSQL strategies, each
// on a server of the test's own that it stops and starts: an outage shorter than the lease is
// ridden out, a longer one loses the lease and on_lost is called once. (Apart from
// lease_renewal_test.cpp: restarting servers takes most of this binary's time.)
#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include "support/lease_contenders.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;
using Clock = std::chrono::steady_clock;

namespace {

using Kind = avout::testing::LeaseStoreKind;
using Contender = avout::testing::LeaseContender;
using LossLog = avout::testing::LeaseLossLog;
const auto& all_kinds = avout::testing::all_lease_stores;
const auto kind_name = avout::testing::lease_store_name;

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/lease-outage-test", stem);
}

// A server of `kind` of the test's own, to stop and start.
struct OwnServer {
  std::unique_ptr<avout::testing::ZooKeeperServer> zookeeper;
  std::unique_ptr<avout::testing::RedisServer> redis;
  std::unique_ptr<avout::testing::PostgresServer> postgres;

  explicit OwnServer(Kind kind) {
    switch (kind) {
      case Kind::zookeeper: zookeeper = std::make_unique<avout::testing::ZooKeeperServer>(); break;
      case Kind::redis: redis = std::make_unique<avout::testing::RedisServer>(true); break;
      case Kind::postgres: postgres = std::make_unique<avout::testing::PostgresServer>(); break;
    }
  }
  std::string address() const {
    if (zookeeper) return zookeeper->connect_string();
    if (redis) return redis->url();
    return postgres->url();
  }
  void stop() {
    if (zookeeper) zookeeper->stop();
    if (redis) redis->stop();
    if (postgres) postgres->stop();
  }
  void start() {
    if (zookeeper) zookeeper->start();
    if (redis) redis->start();
    if (postgres) postgres->start();
  }
};

}  // namespace

TEST_CASE("a store outage shorter than the lease is ridden out; a longer one loses it") {
  for (Kind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    OwnServer server(kind);
    const std::string name = unique_name("outage");
    Contender holder(kind, name, server.address(), scaled(20s));
    LossLog losses;
    losses.attach(*holder.leases);
    // Long enough that a restart (PostgreSQL's takes the longest) fits well inside it.
    const auto duration = scaled(8s);
    const auto lease = holder->lock("k", {.duration = duration, .keep_alive = true});
    server.stop();
    const auto stopped = Clock::now();
    std::this_thread::sleep_for(scaled(1s));
    server.start();
    // The outage as the holder saw it: until a request of its own client or store succeeded.
    const auto until = Clock::now() + scaled(20s);
    std::optional<Clock::time_point> back;
    while (!back && Clock::now() < until) {
      try {
        if (auto probe = holder->try_lock("probe", 1s)) (void)holder->unlock(*probe);
        back = Clock::now();
      } catch (const avout::Error&) {
        std::this_thread::sleep_for(50ms);
      }
    }
    REQUIRE(back);
    // Renewals resume: only one sent after the holder is back moves the end a lease past it.
    while (lease.latest_expiry() < *back + duration && losses.count() == 0 &&
           Clock::now() < until) {
      std::this_thread::sleep_for(50ms);
    }
    const auto outage = std::chrono::duration_cast<std::chrono::milliseconds>(*back - stopped);
    MESSAGE(store_kind << ": the holder was cut off for " << outage.count() << " ms");
    // The lease had 2/3 of its duration left at least when the server stopped, and renewals
    // are retried every duration/10: a holder back within half of it must keep the lease.
    if (outage < duration / 2) {
      CHECK(losses.count() == 0);
      CHECK(lease.running());
      Contender other(kind, name, server.address(), scaled(20s));
      CHECK_FALSE(other->try_lock("k", 1s));
      CHECK(holder->unlock(lease));
    } else {
      MESSAGE("the holder was away too long to show the lease ridden out");
      (void)holder->unlock(lease);
      std::lock_guard lock(losses.mutex);
      REQUIRE(losses.tokens.size() <= 1);  // told once at most; the case below counts anew
      losses.tokens.clear();
    }

    const auto short_lease = holder->lock("s", {.duration = scaled(1s), .keep_alive = true});
    server.stop();
    const bool lost = losses.wait_for(1, scaled(20s));
    server.start();
    REQUIRE(lost);
    CHECK(losses.tokens.front() == short_lease.token);
    CHECK_FALSE(short_lease.running());
    std::this_thread::sleep_for(scaled(1s));
    CHECK(losses.count() == 1);
  }
}
