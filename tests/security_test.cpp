// Access control: with digest credentials every node avout creates is readable and writable
// only by sessions holding them; Redis AUTH is used and its password never printed.
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <cstdlib>

using namespace std::chrono_literals;

namespace {

std::string unique_root(const std::string& stem) { return avout::testing::unique_name("", stem); }

avout::ClientOptions options(const std::string& root, std::optional<std::string> digest) {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 6000ms,
                              .digest = std::move(digest),
                              .root = root};
}

avout::SessionOptions session_options(std::optional<std::string> digest) {
  return avout::SessionOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                               .session_timeout = 6000ms,
                               .digest = std::move(digest)};
}

// Every node below `path` (and `path` itself), as `session` sees them.
void every_node(avout::ZooKeeperSession& session, const std::string& path,
                std::vector<std::string>& nodes) {
  nodes.push_back(path);
  for (const auto& child : session.children(path))
    every_node(session, avout::join_path(path, child), nodes);
}

}  // namespace

TEST_CASE("with digest credentials, sessions without them can read and change nothing avout made") {
  const std::string root = unique_root("secure");
  avout::Client alice(options(root, "alice:secret"));
  auto atom = alice.atom<long>("/counter", 1);
  auto ref = alice.ref<std::string>("/accounts/a", "private");
  auto agent = alice.agent<long>("/jobs", 0);
  alice.dosync([&] { ref.ref_set("still private"); });
  agent.send([](long v) { return v + 1; });
  agent.await(30s);
  auto lease = alice.lease_lock("/leases").lock("k", {.duration = 5s, .max_wait = 1s});

  std::vector<std::string> nodes;
  every_node(alice.session(), root, nodes);
  REQUIRE(nodes.size() > 10);  // atoms, heads, tags, clock, sessions, agents, leases...

  for (const char* credentials : {"", "mallory:guess"}) {
    CAPTURE(credentials);
    avout::ZooKeeperSession stranger(
        session_options(*credentials ? std::optional<std::string>(credentials) : std::nullopt));
    for (const auto& node : nodes) {
      CAPTURE(node);
      CHECK_THROWS_AS(stranger.get(node), avout::NoAuth);
      CHECK_THROWS_AS(stranger.children(node), avout::NoAuth);
      CHECK_THROWS_AS(stranger.set(node, avout::to_bytes("mine")), avout::NoAuth);
      CHECK_THROWS_AS(stranger.create(avout::join_path(node, "intruder"), {}), avout::NoAuth);
    }
    // A client without the credentials cannot even start on that root.
    CHECK_THROWS_AS(
        avout::Client(
            options(root, *credentials ? std::optional<std::string>(credentials) : std::nullopt)),
        avout::NoAuth);
  }
  // Nothing changed; a second process with the credentials sees everything.
  avout::Client alice_again(options(root, "alice:secret"));
  CHECK(alice_again.atom<long>("/counter", 0).deref() == 1);
  CHECK(alice_again.ref<std::string>("/accounts/a", "").deref() == "still private");
  CHECK(alice_again.agent<long>("/jobs", 0).deref() == 1);
  CHECK(alice.lease_lock("/leases").unlock(lease));
}

TEST_CASE("Redis AUTH: the password is used, required, and never printed") {
  avout::testing::RedisServer server;
  const std::string port = std::to_string(server.port());
  REQUIRE(std::system(
              ("redis-cli -p " + port + " CONFIG SET requirepass s3cret-pw >/dev/null").c_str()) ==
          0);

  avout::redis::Store with_password("tcp://:s3cret-pw@127.0.0.1:" + port);
  avout::Client client(options(unique_root("redis-auth"), std::nullopt));
  auto atom = client.atom<long>("/authenticated", 5, with_password);
  CHECK(atom.swap([](long v) { return v + 1; }) == 6);

  for (const std::string& url : {"tcp://127.0.0.1:" + port, "tcp://:wrong-pw@127.0.0.1:" + port}) {
    CAPTURE(url);
    avout::redis::Store refused(url);
    try {
      (void)client.atom<long>("/authenticated", 0, refused).deref();
      FAIL("a store without the right password was served");
    } catch (const avout::BackendError& error) {
      const std::string message = error.what();
      CHECK(message.find("s3cret-pw") == std::string::npos);
      CHECK(message.find("wrong-pw") == std::string::npos);
    }
  }
  CHECK(atom.deref() == 6);
}
