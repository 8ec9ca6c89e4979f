// The fault injectors themselves (support/zookeeper_faults.hpp, support/faulty_store.hpp): each
// fault does what the randomized workload relies on, against real servers.
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "support/faulty_store.hpp"
#include "support/servers.hpp"
#include "support/tcp_relay.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

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

TEST_CASE("an injected lost reply reports connection loss for a create the server applied") {
  avout::Client client(options());
  auto& session = client.session();
  const std::string path = client.options().root + "/lost-reply";
  {
    avout::testing::FaultPlan plan(1, {.reply_lost = 1.0}, zookeeper().connect_string());
    CHECK_THROWS_AS(session.create(path, avout::to_bytes("x")), avout::ConnectionLoss);
    CHECK(avout::testing::FaultPlan::counts().reply_lost == 1);
  }
  CHECK(session.exists(path).has_value());
}

TEST_CASE("an injected early failure reports connection loss and sends nothing") {
  avout::Client client(options());
  auto& session = client.session();
  const std::string path = client.options().root + "/early-failure";
  {
    avout::testing::FaultPlan plan(1, {.fail_early = 1.0}, zookeeper().connect_string());
    CHECK_THROWS_AS(session.create(path, avout::to_bytes("x")), avout::ConnectionLoss);
    CHECK_THROWS_AS(session.get(path), avout::ConnectionLoss);
  }
  CHECK_FALSE(session.exists(path).has_value());
}

TEST_CASE("an injected delay holds the reply back and still delivers it") {
  avout::Client client(options());
  auto& session = client.session();
  const std::string path = client.options().root + "/delayed";
  avout::testing::FaultPlan plan(1, {.delay = 1.0, .max_delay = 150ms},
                                 zookeeper().connect_string());
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) session.exists(path);
  CHECK(std::chrono::steady_clock::now() - started >= 5ms);
  CHECK(avout::testing::FaultPlan::counts().delayed == 5);
}

TEST_CASE("an injected expiry ends the session and the client renews it") {
  avout::Client client(options());
  auto& session = client.session();
  const auto before = session.session_id();
  const std::string path = client.options().root + "/expired";
  // An expiry is best effort (the server may hand the session back before the twin closes
  // it): each request under the plan tries again, a few suffice.
  const auto deadline = std::chrono::steady_clock::now() + avout::testing::scaled(30s);
  while (session.session_id() == before && std::chrono::steady_clock::now() < deadline) {
    {
      avout::testing::FaultPlan plan(1, {.expire = 1.0}, zookeeper().connect_string());
      try {
        session.set(path, avout::to_bytes("x"));
      } catch (const avout::Error&) {
        // Expired before the request, or the node is not there yet: either is fine here.
      }
    }
    std::this_thread::sleep_for(500ms);
  }
  CHECK(session.session_id() != before);
}

TEST_CASE("a faulty store loses the reply of a write it applied, fails early, or is unavailable") {
  avout::testing::RedisServer redis;
  avout::redis::Store inner(redis.url());
  SUBCASE("reply lost") {
    avout::testing::FaultyStore store(inner, 1, {.reply_lost = 1.0});
    auto cell = store.atom_state("/lost");
    CHECK_THROWS_AS(cell->compare_and_set({}, avout::to_bytes("x")), avout::BackendError);
    store.enable(false);
    CHECK(cell->get().exists());
  }
  SUBCASE("fail early") {
    avout::testing::FaultyStore store(inner, 1, {.fail_early = 1.0});
    auto cell = store.atom_state("/early");
    CHECK_THROWS_AS(cell->compare_and_set({}, avout::to_bytes("x")), avout::BackendError);
    store.enable(false);
    CHECK_FALSE(cell->get().exists());
  }
  SUBCASE("outage") {
    avout::testing::FaultyStore store(inner, 1, {.outage = 1.0, .outage_length = 200ms});
    auto cell = store.atom_state("/outage");
    CHECK_THROWS_AS(cell->get(), avout::BackendError);
    store.enable(false);
    CHECK_NOTHROW(cell->get());
  }
}

TEST_CASE("a held relay, released while its client goes on sending, delivers what it kept first") {
  avout::testing::start_shared_servers();
  avout::testing::TcpRelay relay(avout::testing::shared_redis().port());
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(client >= 0);
  const std::string relay_address = relay.connect_string();
  sockaddr_in address = avout::testing::loopback_address(
      std::stoi(relay_address.substr(relay_address.rfind(':') + 1)));
  REQUIRE(::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  const std::string key = avout::testing::unique_name("relay-order", "key");
  auto send_line = [&](const std::string& line) {
    const std::string bytes = line + "\r\n";
    REQUIRE(::send(client, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size()));
  };
  char buffer[256];
  send_line("PING");  // answered through the relay: it has taken the connection in
  REQUIRE(::recv(client, buffer, sizeof buffer, 0) == 7);
  relay.hold();
  send_line("SET " + key + " first");
  REQUIRE(relay.keeps("first", 2s));
  std::this_thread::sleep_for(50ms);  // the relay waits on both ends again
  relay.release();
  send_line("SET " + key + " second");  // old code: relayed at once, before the kept SET
  std::string replies;
  auto read_until_lines = [&](std::size_t wanted) {
    auto lines = [&] {
      std::size_t count = 0;
      for (auto at = replies.find("\r\n"); at != std::string::npos;
           at = replies.find("\r\n", at + 2))
        ++count;
      return count;
    };
    while (lines() < wanted) {
      const ssize_t got = ::recv(client, buffer, sizeof buffer, 0);
      REQUIRE(got > 0);
      replies.append(buffer, static_cast<std::size_t>(got));
    }
  };
  read_until_lines(2);  // both SETs answered
  send_line("GET " + key);
  read_until_lines(4);  // and the bulk string
  ::close(client);
  CHECK(replies == "+OK\r\n+OK\r\n$6\r\nsecond\r\n");
}
