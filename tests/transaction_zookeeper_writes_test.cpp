// What a commit costs ZooKeeper: one write (one zxid), its clean-up riding in the commit
// multi; the last marker of a client goes when it closes; a marker gc took meanwhile costs
// a commit neither a failure nor a retry.
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <functional>

using namespace std::chrono_literals;

namespace {

avout::ClientOptions options(const std::string& root = "/avout") {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 6000ms,
                              .root = root};
}

// ZooKeeper writes (zxids) `commit` makes, counted between two writes of a probe node on the
// same session (a session's requests are applied in order). min_history 0: every commit
// trims the version it replaces.
std::int64_t zookeeper_writes(avout::Client& client, const std::function<void()>& commit) {
  const std::string probe = client.options().root + "/zookeeper-writes-probe";
  client.session().create_recursive(probe);
  const auto before = client.session().set(probe, {}).mzxid;
  commit();
  const auto after = client.session().set(probe, {}).mzxid;
  return after - before - 1;
}

std::vector<std::string> markers(avout::Client& client) {
  return client.session().children(client.options().root + "/stm/markers");
}

}  // namespace

TEST_CASE("a commit costs ZooKeeper one write, its clean-up riding in the commit multi") {
  avout::testing::start_shared_servers();
  avout::Client client(options());
  avout::redis::Store redis(avout::testing::shared_redis().url());
  const std::string zookeeper_name = avout::testing::unique_name("/zk-writes-test", "zk");
  auto in_zookeeper = client.ref<long>(zookeeper_name, 0);
  auto in_redis = client.ref<long>(avout::testing::unique_name("/zk-writes-test", "redis"), 0, redis);
  for (long v = 1; v <= 2; ++v) {  // a marker of an earlier commit and a version to trim
    client.dosync([&] {
      in_zookeeper.ref_set(v);
      in_redis.ref_set(v);
    });
  }
  CHECK(zookeeper_writes(client, [&] { client.dosync([&] { in_zookeeper.ref_set(3); }); }) == 1);
  CHECK(zookeeper_writes(client, [&] { client.dosync([&] { in_redis.ref_set(3); }); }) == 1);
  CHECK(zookeeper_writes(client, [&] {
          client.dosync([&] {
            in_zookeeper.ref_set(4);
            in_redis.ref_set(4);
          });
        }) == 1);
  CHECK(in_zookeeper.deref() == 4);
  CHECK(in_redis.deref() == 4);
  // The trimmed ZooKeeper-held versions went with their commits: only the newest is left.
  CHECK(client.default_store().reference_data(client.ref_value_key(zookeeper_name))->points().size() == 1);
}

TEST_CASE("only a client's last marker outlives its commits, and closing the client removes it") {
  avout::testing::start_shared_servers();
  const std::string root = avout::testing::unique_name("/zk-writes-test", "markers");
  {
    avout::Client client(options(root));
    auto ref = client.ref<long>("/counted", 0);
    for (int i = 0; i < 3; ++i) client.dosync([&] { ref.alter([](long v) { return v + 1; }); });
    CHECK(markers(client).size() == 1);
  }
  avout::Client after(options(root));
  CHECK(markers(after).empty());
}

TEST_CASE("a commit whose earlier marker gc took meanwhile lands without a retry") {
  avout::testing::start_shared_servers();
  const std::string root = avout::testing::unique_name("/zk-writes-test", "taken");
  avout::Client client(options(root));
  avout::Client collector(options(root));
  auto ref = client.ref<long>("/counted", 0);
  client.dosync([&] { ref.alter([](long v) { return v + 1; }); });
  const auto left = markers(client);
  REQUIRE(left.size() == 1);
  collector.session().remove(root + "/stm/markers/" + left.front(), 0);  // as gc does after its grace
  const auto retries = client.transaction_counts().second;
  client.dosync([&] { ref.alter([](long v) { return v + 1; }); });
  CHECK(ref.deref() == 2);
  CHECK(client.transaction_counts().second == retries);
  CHECK(markers(client).size() == 1);  // the new commit's own
}
