// Redis and PostgreSQL failures come in two kinds, both BackendError: StoreUnavailable when the
// server cannot be reached (a write may or may not have been applied) and StoreRefused when it
// answered with an error (nothing applied).
#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include "support/servers.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>

using namespace std::chrono_literals;

namespace {

// Stores a value through `store`, stops its server with `stop_server`, and checks that an
// atom's read and write and a batch of ref values each give StoreUnavailable.
void check_unavailable_once_stopped(avout::Store& store, const std::function<void()>& stop_server) {
  auto cell = store.atom_state("/unavailable");
  REQUIRE(cell->compare_and_set(avout::Versioned{}, avout::to_bytes("kept")));
  const auto before = cell->get();
  stop_server();
  CHECK_THROWS_AS(cell->get(), avout::StoreUnavailable);
  CHECK_THROWS_AS(cell->compare_and_set(before, avout::to_bytes("lost")), avout::StoreUnavailable);
  auto data = store.reference_data("/unavailable-ref");
  const avout::PointValue value{data.get(), avout::Point{"p"}, avout::to_bytes("v")};
  CHECK_THROWS_AS(store.set_values({&value, 1}), avout::StoreUnavailable);
}

}  // namespace

TEST_CASE("a stopped Redis server gives StoreUnavailable for reads and writes") {
  avout::testing::RedisServer server;
  avout::redis::Store store(avout::redis::StoreOptions{
      .url = server.url(), .connect_timeout = 1000ms, .command_timeout = 2000ms});
  check_unavailable_once_stopped(store, [&] { server.stop(); });
}

TEST_CASE("a Redis server that refuses the password gives StoreRefused and applies nothing") {
  avout::testing::RedisServer server;
  const std::string port = std::to_string(server.port());
  REQUIRE(std::system(
              ("redis-cli -p " + port + " CONFIG SET requirepass right >/dev/null").c_str()) == 0);
  avout::redis::Store wrong("redis://:wrong@127.0.0.1:" + port);
  CHECK_THROWS_AS(
      wrong.atom_state("/refused")->compare_and_set(avout::Versioned{}, avout::to_bytes("x")),
      avout::StoreRefused);
  avout::redis::Store none("redis://127.0.0.1:" + port);  // NOAUTH for every command
  auto data = none.reference_data("/refused-ref");
  const avout::PointValue value{data.get(), avout::Point{"p"}, avout::to_bytes("v")};
  CHECK_THROWS_AS(none.set_values({&value, 1}), avout::StoreRefused);
  avout::redis::Store right("redis://:right@127.0.0.1:" + port);
  CHECK_FALSE(right.atom_state("/refused")->get().exists());
  CHECK_THROWS_AS(right.reference_data("/refused-ref")->get(avout::Point{"p"}),
                  avout::MissingPoint);
}

TEST_CASE("a stopped PostgreSQL server gives StoreUnavailable for reads and writes") {
  avout::testing::PostgresServer server;
  avout::postgres::Store store(
      avout::postgres::StoreOptions{.url = server.url(), .connect_timeout = 2s});
  check_unavailable_once_stopped(store, [&] { server.stop(); });
}

TEST_CASE("a PostgreSQL server that refuses a write gives StoreRefused and applies nothing") {
  const std::string url = avout::testing::shared_postgres().url();
  avout::postgres::Store writable(url);
  auto cell = writable.atom_state("/read-only");
  REQUIRE_FALSE(cell->get().exists());  // the tables exist before the read-only session
  // Every transaction of this session is read-only: the server refuses each write (the
  // first being the store's CREATE TABLE IF NOT EXISTS on a new connection).
  avout::postgres::Store read_only(url + "?options=-c%20default_transaction_read_only%3Don");
  CHECK_THROWS_AS(
      read_only.atom_state("/read-only")->compare_and_set(avout::Versioned{}, avout::to_bytes("x")),
      avout::StoreRefused);
  auto data = read_only.reference_data("/read-only-ref");
  const avout::PointValue value{data.get(), avout::Point{"p"}, avout::to_bytes("v")};
  CHECK_THROWS_AS(read_only.set_values({&value, 1}), avout::StoreRefused);
  CHECK_FALSE(cell->get().exists());
  CHECK_THROWS_AS(writable.reference_data("/read-only-ref")->get(avout::Point{"p"}),
                  avout::MissingPoint);
}
