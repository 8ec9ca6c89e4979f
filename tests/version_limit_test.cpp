// ZooKeeper's node versions are int32: a conditional write at the last version would wrap the
// node's version, and a wrapped version of -1 would make the next condition unconditional.
// ZooKeeper cannot be made to hold a node near 2^31 without 2^31 writes, so these tests send
// conditions naming such versions against a real server: every versioned operation of avout
// passes the one check in the session (ref heads, agent heads, atoms, barging tags, leases).
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <climits>

using namespace std::chrono_literals;

namespace {

avout::Client make_client() {
  return avout::Client(avout::ClientOptions{
      .hosts = avout::testing::shared_zookeeper().connect_string(), .session_timeout = 6000ms});
}

std::string unique_path(const std::string& stem) {
  return avout::testing::unique_name("/version-limit", stem);
}

}  // namespace

TEST_CASE(
    "a conditional write at ZooKeeper's last node version is VersionLimitReached naming the node "
    "and changes nothing") {
  avout::Client client = make_client();
  auto& session = client.session();
  const std::string path = unique_path("node");
  session.create_recursive(path);
  session.set(path, avout::to_bytes("kept"), 0);

  try {
    session.set(path, avout::to_bytes("lost"), INT32_MAX);
    FAIL("a write at the last version was sent");
  } catch (const avout::VersionLimitReached& error) {
    CHECK(std::string(error.what()).find(path) != std::string::npos);
  }
  CHECK_THROWS_AS(session.multi({avout::op::SetData{path, avout::to_bytes("lost"), INT32_MAX}}),
                  avout::VersionLimitReached);
  // A version below -1 was read from a node that already wrapped: it is refused too.
  CHECK_THROWS_AS(session.multi({avout::op::Check{path, INT32_MIN}}), avout::VersionLimitReached);
  CHECK_THROWS_AS(session.remove(path, -2), avout::VersionLimitReached);
  CHECK(session.get(path).data == avout::to_bytes("kept"));
  // One below the last version is still an ordinary condition (here a stale one).
  CHECK_THROWS_AS(session.set(path, avout::to_bytes("lost"), INT32_MAX - 1), avout::BadVersion);
}

TEST_CASE(
    "an atom whose node reached ZooKeeper's last version refuses to be written instead of writing "
    "unconditionally") {
  avout::Client client = make_client();
  const std::string name = unique_path("atom");
  auto cell = client.default_store().atom_state(name);
  REQUIRE(cell->compare_and_set(avout::Versioned{}, avout::to_bytes("first")));
  const avout::Versioned now = cell->get();
  // The compare-and-set a writer sends after reading a node at the last version.
  const avout::Versioned at_limit{now.value, std::to_string(INT32_MAX)};
  CHECK_THROWS_AS(cell->compare_and_set(at_limit, avout::to_bytes("second")),
                  avout::VersionLimitReached);
  CHECK(cell->get().value == avout::to_bytes("first"));
  CHECK_FALSE(cell->compare_and_set(avout::Versioned{now.value, std::to_string(INT32_MAX - 1)},
                                    avout::to_bytes("second")));
}
