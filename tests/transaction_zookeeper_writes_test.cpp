// What a commit costs ZooKeeper: its multi and the removal of its marker (two zxids), the
// removal of the versions it trims riding in the multi; no marker outlives its commit.
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

TEST_CASE("a commit costs ZooKeeper its multi and its marker's removal, trimmed versions riding in the multi") {
  avout::testing::start_shared_servers();
  avout::Client client(options());
  avout::redis::Store redis(avout::testing::shared_redis().url());
  const std::string zookeeper_name = avout::testing::unique_name("/zk-writes-test", "zk");
  auto in_zookeeper = client.ref<long>(zookeeper_name, 0);
  auto in_redis = client.ref<long>(avout::testing::unique_name("/zk-writes-test", "redis"), 0, redis);
  for (long v = 1; v <= 2; ++v) {  // versions to trim
    client.dosync([&] {
      in_zookeeper.ref_set(v);
      in_redis.ref_set(v);
    });
  }
  CHECK(zookeeper_writes(client, [&] { client.dosync([&] { in_zookeeper.ref_set(3); }); }) == 2);
  CHECK(zookeeper_writes(client, [&] { client.dosync([&] { in_redis.ref_set(3); }); }) == 2);
  CHECK(zookeeper_writes(client, [&] {
          client.dosync([&] {
            in_zookeeper.ref_set(4);
            in_redis.ref_set(4);
          });
        }) == 2);
  CHECK(in_zookeeper.deref() == 4);
  CHECK(in_redis.deref() == 4);
  // The trimmed ZooKeeper-held versions went with their commits: only the newest is left.
  CHECK(client.default_store().reference_data(client.ref_value_key(zookeeper_name))->points().size() == 1);
}

TEST_CASE("a landed commit leaves no marker behind") {
  avout::testing::start_shared_servers();
  const std::string root = avout::testing::unique_name("/zk-writes-test", "markers");
  avout::Client client(options(root));
  auto ref = client.ref<long>("/counted", 0);
  for (int i = 0; i < 3; ++i) client.dosync([&] { ref.alter([](long v) { return v + 1; }); });
  // The removals were sent without waiting; the session applies this read after them.
  CHECK(markers(client).empty());
  CHECK(ref.deref() == 3);
}
