// Every store passes the same conformance cases; a store whose server is down fails with
// BackendError in bounded time and works again after the server returns.
#include <avout/postgres.hpp>
#include <avout/redis.hpp>
#include <avout/zookeeper.hpp>

#include "support/servers.hpp"
#include "support/store_conformance.hpp"

#include <chrono>

using namespace std::chrono_literals;
using avout::testing::scaled;

TEST_CASE("the ZooKeeper store passes the conformance cases") {
  avout::ZooKeeperSession session(
      avout::SessionOptions{.hosts = avout::testing::shared_zookeeper().connect_string()});
  avout::testing::run_store_conformance(
      [&] { return std::make_unique<avout::zookeeper::Store>(session, "/conformance-store"); });
}

TEST_CASE("the Redis store passes the conformance cases") {
  const std::string url = avout::testing::shared_redis().url();
  avout::testing::run_store_conformance([&] { return std::make_unique<avout::redis::Store>(url); });
}

TEST_CASE("the PostgreSQL store passes the conformance cases") {
  const std::string url = avout::testing::shared_postgres().url();
  avout::testing::run_store_conformance(
      [&] { return std::make_unique<avout::postgres::Store>(url); });
}

namespace {
// A stopped server: BackendError within the timeout, nothing half-written; after a restart
// the same Store object works again.
template <typename Server>
void survives_an_outage(Server& server, avout::Store& store) {
  auto cell = store.atom_state("/outage");
  REQUIRE(cell->compare_and_set(avout::Versioned{}, avout::to_bytes("kept")));
  const auto before = cell->get();
  server.stop();
  const auto started = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(cell->compare_and_set(before, avout::to_bytes("lost")), avout::BackendError);
  CHECK_THROWS_AS(cell->get(), avout::BackendError);
  CHECK(std::chrono::steady_clock::now() - started < scaled(15s));
  server.start();
  const auto after = cell->get();
  CHECK(after.value == avout::to_bytes("kept"));
  CHECK(cell->compare_and_set(after, avout::to_bytes("new")));
}
}  // namespace

TEST_CASE("a Redis store whose server is down fails with BackendError and recovers") {
  avout::testing::RedisServer server(true);
  avout::redis::Store store(avout::redis::StoreOptions{
      .url = server.url(), .connect_timeout = 1000ms, .command_timeout = 2000ms});
  survives_an_outage(server, store);
}

TEST_CASE("a PostgreSQL store whose server is down fails with BackendError and recovers") {
  avout::testing::PostgresServer server;
  avout::postgres::Store store(
      avout::postgres::StoreOptions{.url = server.url(), .connect_timeout = 2s});
  survives_an_outage(server, store);
}

namespace {
// A store pointed at a closed port fails with BackendError whose message omits `secret`.
void fails_without_naming(avout::Store& store, const std::string& secret) {
  try {
    store.atom_state("/x")->get();
    FAIL("a closed port must fail");
  } catch (const avout::BackendError& error) {
    CHECK(std::string(error.what()).find(secret) == std::string::npos);
  }
}
}  // namespace

TEST_CASE("store URLs that make no sense are InvalidName, and passwords never reach messages") {
  CHECK_THROWS_AS(avout::redis::Store("http://127.0.0.1:6379"), avout::InvalidName);
  CHECK_THROWS_AS(avout::redis::Store("tcp://127.0.0.1:notaport"), avout::InvalidName);
  avout::redis::Store closed(avout::redis::StoreOptions{
      .url = "tcp://:hunter2@127.0.0.1:" + std::to_string(avout::testing::free_port()),
      .connect_timeout = 500ms});
  fails_without_naming(closed, "hunter2");
  avout::postgres::Store refused(avout::postgres::StoreOptions{
      .url = "postgresql://avout:hunter2@127.0.0.1:" + std::to_string(avout::testing::free_port()) +
             "/avout",
      .connect_timeout = 1s});
  fails_without_naming(refused, "hunter2");
}
