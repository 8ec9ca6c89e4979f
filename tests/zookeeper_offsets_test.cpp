// The injector's counter offsets (support/zookeeper_faults.hpp, CounterOffset): sequential
// suffixes and data versions shown near their wrap, and translated back on the way out, so
// tests reach what 2^31 creates or updates would bring.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <climits>

using namespace std::chrono_literals;

namespace {

std::string unique_path(const std::string& stem) {
  return avout::testing::unique_name("/offsets-test", stem);
}

avout::SessionOptions options() {
  return avout::SessionOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                               .session_timeout = 4000ms};
}

}  // namespace

TEST_CASE(
    "sequential suffixes are shown past the wrap as ZooKeeper prints them, and paths sent back are "
    "real") {
  avout::ZooKeeperSession zookeeper(options());
  const std::string folder = unique_path("sequence");
  zookeeper.create_recursive(folder);
  avout::testing::CounterOffset wrap(folder, (std::int64_t{1} << 31) - 2);
  std::vector<std::string> created;
  for (int i = 0; i < 3; ++i) {
    created.push_back(
        zookeeper.create(folder + "/n-", {}, avout::CreateMode::ephemeral_sequential));
  }
  CHECK(created == std::vector<std::string>{folder + "/n-2147483646", folder + "/n-2147483647",
                                            folder + "/n--2147483648"});
  const auto multi = zookeeper.multi(
      {avout::op::Create{folder + "/n-", {}, avout::CreateMode::ephemeral_sequential}});
  REQUIRE(multi.committed);
  CHECK(multi.results[0].created_path == folder + "/n--2147483647");
  auto names = zookeeper.children(folder);
  std::sort(names.begin(), names.end());
  CHECK(names ==
        std::vector<std::string>{"n--2147483647", "n--2147483648", "n-2147483646", "n-2147483647"});
  CHECK(zookeeper.exists(created[2]).has_value());
  zookeeper.remove(created[2]);
  CHECK_FALSE(zookeeper.exists(created[2]).has_value());
  CHECK(zookeeper.children(folder).size() == 3);
}

TEST_CASE("data versions are shown offset and versions sent are translated back, -1 unchanged") {
  avout::ZooKeeperSession zookeeper(options());
  const std::string node = unique_path("version");
  zookeeper.create_recursive(node);
  avout::testing::CounterOffset near_limit(node, 0, INT32_MAX - 2);
  CHECK(zookeeper.get(node).stat.version == INT32_MAX - 2);
  CHECK(zookeeper.set(node, avout::to_bytes("a"), INT32_MAX - 2).version == INT32_MAX - 1);
  CHECK(zookeeper.exists(node)->version == INT32_MAX - 1);
  CHECK_THROWS_AS(zookeeper.set(node, avout::to_bytes("b"), INT32_MAX - 2), avout::BadVersion);
  const auto multi =
      zookeeper.multi({avout::op::Check{node, INT32_MAX - 1},
                       avout::op::SetData{node, avout::to_bytes("c"), INT32_MAX - 1}});
  REQUIRE(multi.committed);
  CHECK(multi.results[1].stat.version == INT32_MAX);
  // avout refuses a conditional write at the last version before sending it (wrap to -1).
  CHECK_THROWS_AS(zookeeper.set(node, avout::to_bytes("d"), INT32_MAX), avout::VersionLimitReached);
  CHECK(zookeeper.set(node, avout::to_bytes("e"), -1).version == INT32_MIN);  // the wrap itself
  zookeeper.remove(node, -1);
  CHECK_FALSE(zookeeper.exists(node).has_value());
  const std::string fresh = node + "-fresh";  // a new node shows the offset as its version
  zookeeper.create(fresh, {});
  CHECK_THROWS_AS(zookeeper.remove(fresh, 0), avout::BadVersion);
  zookeeper.remove(fresh, INT32_MAX - 2);
  CHECK_FALSE(zookeeper.exists(fresh).has_value());
}
