// The slow half of transaction_safety_test: the same promises where a second ZooKeeper
// server, an expired session or several processes are needed to break them.
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"  // unique_name
#include "support/trimmed_reads.hpp"

#include <doctest/doctest.h>

#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

long plus(long value, long delta) { return value + delta; }

avout::ClientOptions options_for(const std::string& hosts) {
  return avout::ClientOptions{.hosts = hosts, .session_timeout = 4000ms};
}

avout::ClientOptions options() {
  return options_for(avout::testing::shared_zookeeper().connect_string());
}

}  // namespace

TEST_CASE(
    "reads from a follower inside and outside dosync never fail while another process trims what "
    "they read") {
  avout::testing::ZooKeeperEnsemble ensemble;
  (void)avout::testing::shared_redis();
  const int leader = ensemble.leader();
  REQUIRE(leader >= 0);
  const int follower = (leader + 1) % 3;
  const auto member = [&](int index) {
    return "127.0.0.1:" + std::to_string(ensemble.port(index));
  };
  // The writer commits through the leader; the reader's follower may lag behind it.
  avout::testing::check_reads_survive_trimming(
      options_for(member(leader)), options_for(member(follower)),
      avout::testing::unique_name("/stm-safety", "follower-trimmed"));
}

TEST_CASE("a commit whose session was renewed while storing values starts the attempt again") {
  (void)avout::testing::shared_redis();
  avout::Client client(options());
  avout::Client sweeper(options());
  avout::redis::Store redis(avout::testing::shared_redis().url());
  const std::string prefix = avout::testing::unique_name("/stm-safety", "renewed");
  auto a = client.ref<long>(prefix + "/a", 0, redis);
  auto b = client.ref<long>(prefix + "/b", 0, redis);
  client.dosync([&] {  // heads and tags are cached from here on: no read fails on expiry
    a.alter(plus, 1);
    b.alter(plus, 1);
  });
  bool armed = false;
  int validated = 0;
  // The second value validated finds the first already stored under the old session; the
  // session expires and another process's gc sweeps what that session left.
  auto expire_midway = [&](const long&) {
    if (armed && ++validated == 2) {
      armed = false;
      client.session().expire_for_testing();
      (void)sweeper.gc({redis});
    }
    return true;
  };
  a.set_validator(expire_midway);
  b.set_validator(expire_midway);
  client.dosync([&] {
    armed = validated == 0;
    a.alter(plus, 1);
    b.alter(plus, 1);
  });
  avout::Client reader(options());  // fresh: the writer's cache would hide an erased value
  CHECK(reader.ref<long>(prefix + "/a", 0, redis).deref() == 2);
  CHECK(reader.ref<long>(prefix + "/b", 0, redis).deref() == 2);
}
