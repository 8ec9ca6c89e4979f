// What other tools see in the Redis and PostgreSQL stores (docs/stored-layout.md): a JSON
// value's document and a string's text as is, read with the real redis-cli and psql; data of
// the old layout (the core's bytes whole) still read; old PostgreSQL tables migrated; atom
// swaps exact under concurrency.
#include <avout/avout.hpp>
#include <avout/json.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include "records/atom_envelope.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <pqxx/pqxx>

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

const nlohmann::json order = {{"id", "a1"}, {"quantity", 3}, {"tags", {"rush", "café"}}};
const std::string greeting = "hello, world";

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 6000ms};
}

// `argument` quoted for /bin/sh.
std::string quoted(const std::string& argument) {
  std::string out = "'";
  for (char c : argument) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// What the program `argv` prints on stdout, less one trailing newline; throws when it fails.
std::string output_of(const std::vector<std::string>& argv) {
  std::string command;
  for (const auto& argument : argv) command += quoted(argument) + " ";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen((command + "2>&1").c_str(), "r"), pclose);
  if (!pipe) throw std::runtime_error("cannot run " + command);
  std::string out;
  std::array<char, 4096> buffer{};
  for (std::size_t got; (got = std::fread(buffer.data(), 1, buffer.size(), pipe.get())) > 0;)
    out.append(buffer.data(), got);
  if (pclose(pipe.release()) != 0) throw std::runtime_error(command + "failed: " + out);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string redis_cli(const std::vector<std::string>& arguments) {
  std::vector<std::string> argv{"redis-cli", "-p",
                                std::to_string(avout::testing::shared_redis().port()), "--raw"};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  return output_of(argv);
}

std::string psql(const std::string& query) {
  return output_of(
      {"psql", avout::testing::shared_postgres().url(), "-X", "-A", "-t", "-c", query});
}

// `text` as a single-quoted SQL literal.
std::string literal(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// The one stored point of a ref or agent whose values Redis keeps under `key`.
std::string redis_only_point(const std::string& key) {
  const std::string points = redis_cli({"SMEMBERS", "avout:ref-points:" + key});
  REQUIRE(points.find('\n') == std::string::npos);
  return points;
}

// Runs a Redis command with binary-safe arguments on a connection of its own.
void redis_command(const std::vector<std::string>& arguments) {
  std::unique_ptr<redisContext, void (*)(redisContext*)> context(
      redisConnect("127.0.0.1", avout::testing::shared_redis().port()), redisFree);
  REQUIRE((context && !context->err));
  std::vector<const char*> texts;
  std::vector<std::size_t> sizes;
  for (const auto& a : arguments) {
    texts.push_back(a.data());
    sizes.push_back(a.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(context.get(), static_cast<int>(texts.size()), texts.data(), sizes.data()));
  REQUIRE(reply != nullptr);
  const bool failed = reply->type == REDIS_REPLY_ERROR;
  freeReplyObject(reply);
  REQUIRE(!failed);
}

std::string as_text(const avout::Bytes& bytes) { return std::string(bytes.begin(), bytes.end()); }

// Makes a ref and an agent holding `order` and another pair holding `greeting` under `name`
// in `store`, checks avout reads them back, and returns each one's value key and its text.
std::vector<std::pair<std::string, std::string>> write_refs_and_agents(avout::Client& client,
                                                                       const std::string& name,
                                                                       avout::Store& store) {
  auto json_ref = client.ref<nlohmann::json>(name + "/json-ref", order, store);
  auto text_ref = client.ref<std::string>(name + "/text-ref", greeting, store);
  auto json_agent = client.agent<nlohmann::json>(name + "/json-agent", order, store);
  auto text_agent = client.agent<std::string>(name + "/text-agent", greeting, store);
  CHECK(json_ref.deref() == order);
  CHECK(text_ref.deref() == greeting);
  CHECK(json_agent.deref() == order);
  CHECK(text_agent.deref() == greeting);
  return {{client.ref_value_key(name + "/json-ref"), order.dump()},
          {client.ref_value_key(name + "/text-ref"), greeting},
          {client.agent_value_key(name + "/json-agent"), order.dump()},
          {client.agent_value_key(name + "/text-agent"), greeting}};
}

avout::Bytes old_atom_bytes(const std::string& value, std::uint64_t sequence) {
  return avout::detail::encode_envelope(
      avout::detail::AtomEnvelope{sequence, {42}, avout::encode(value)});
}

}  // namespace

TEST_CASE("redis-cli reads a JSON document and a string as they are") {
  avout::Client client(options());
  avout::redis::Store store(avout::testing::shared_redis().url());
  const std::string name = avout::testing::unique_name("/layout", "redis");

  auto json_atom = client.atom<nlohmann::json>(name + "/json-atom", order, store);
  auto text_atom = client.atom<std::string>(name + "/text-atom", "first", store);
  text_atom.reset(greeting);
  CHECK(redis_cli({"HGET", "avout:atom:" + client.atom_value_key(name + "/json-atom"), "value"}) ==
        order.dump());
  const std::string text_key = "avout:atom:" + client.atom_value_key(name + "/text-atom");
  CHECK(redis_cli({"HGET", text_key, "value"}) == greeting);
  CHECK(redis_cli({"HGET", text_key, "format"}) == "text");
  CHECK(redis_cli({"HGET", text_key, "n"}) == "2");

  for (const auto& [key, text] : write_refs_and_agents(client, name, store)) {
    const std::string point_key = "avout:ref:" + key + ":" + redis_only_point(key);
    CHECK(redis_cli({"HGET", point_key, "value"}) == text);
    CHECK(redis_cli({"HGET", point_key, "format"}) == (text == greeting ? "text" : "json"));
  }
  CHECK(json_atom.deref() == order);
}

TEST_CASE("psql reads a JSON document and a string as they are") {
  avout::Client client(options());
  avout::postgres::Store store(avout::testing::shared_postgres().url());
  const std::string name = avout::testing::unique_name("/layout", "postgres");

  auto json_atom = client.atom<nlohmann::json>(name + "/json-atom", order, store);
  auto text_atom = client.atom<std::string>(name + "/text-atom", "first", store);
  text_atom.reset(greeting);
  const auto atom_column = [&](const std::string& column, const std::string& atom) {
    return psql("SELECT " + column +
                " FROM avout_atoms WHERE name = " + literal(client.atom_value_key(name + atom)));
  };
  CHECK(atom_column("value_text", "/json-atom") == order.dump());
  CHECK(atom_column("value_text::jsonb ->> 'id'", "/json-atom") == "a1");
  CHECK(atom_column("value_text", "/text-atom") == greeting);
  CHECK(atom_column("format", "/text-atom") == "text");
  CHECK(atom_column("version", "/text-atom") == "2");

  for (const auto& [key, text] : write_refs_and_agents(client, name, store)) {
    CHECK(psql("SELECT value_text FROM avout_ref_values WHERE name = " + literal(key)) == text);
    CHECK(psql("SELECT format FROM avout_ref_values WHERE name = " + literal(key)) ==
          (text == greeting ? "text" : "json"));
  }
  CHECK(json_atom.deref() == order);
}

TEST_CASE("Redis data of the old layout still reads, and a write moves it to the new one") {
  avout::redis::Store store(avout::testing::shared_redis().url());
  const std::string name = avout::testing::unique_name("/old-layout", "redis");
  // The old layout: an atom's hash held the core's bytes under 'v', a point a plain string.
  const avout::Bytes old_atom = old_atom_bytes("old", 1);
  redis_command({"HSET", "avout:atom:" + name, "v", as_text(old_atom), "n", "1"});
  const avout::Bytes old_point = avout::encode(std::string("old point"));
  redis_command({"SET", "avout:ref:" + name + ":p-1", as_text(old_point)});
  redis_command({"SADD", "avout:ref-points:" + name, "p-1"});

  auto cell = store.atom_state(name);
  const auto read = cell->get();
  CHECK(read.value == old_atom);
  CHECK(read.version == "1");
  const avout::Bytes next = old_atom_bytes("new", 2);
  REQUIRE(cell->compare_and_set(read, next));
  CHECK(cell->get().value == next);
  CHECK(redis_cli({"HEXISTS", "avout:atom:" + name, "v"}) == "0");
  CHECK(redis_cli({"HGET", "avout:atom:" + name, "value"}) == "new");

  auto data = store.reference_data(name);
  CHECK(data->get(avout::Point{"p-1"}) == old_point);
  data->set(avout::encode(std::string("new point")), avout::Point{"p-2"});
  const std::array<avout::PointRead, 3> reads{avout::PointRead{data.get(), {"p-1"}},
                                              avout::PointRead{data.get(), {"p-2"}},
                                              avout::PointRead{data.get(), {"p-3"}}};
  const auto values = store.get_values(reads);
  REQUIRE(values.size() == 3);
  CHECK(values[0] == old_point);
  CHECK(values[1] == avout::encode(std::string("new point")));
  CHECK(!values[2]);
  // A text that spells the old layout's bytes is read as the text: its format says so.
  const avout::Bytes lookalike = avout::encode(as_text(old_point));
  data->set(lookalike, avout::Point{"p-4"});
  CHECK(data->get(avout::Point{"p-4"}) == lookalike);
  CHECK(redis_cli({"HGET", "avout:ref:" + name + ":p-4", "format"}) == "text");
  data->erase(avout::Point{"p-1"});
  CHECK_THROWS_AS(data->get(avout::Point{"p-1"}), avout::MissingPoint);
}

TEST_CASE("PostgreSQL tables of the old layout are migrated and their rows still read") {
  const std::string prefix = "old_" + std::to_string(std::random_device{}() % 1000000) + "_";
  const std::string name = "/old-layout/postgres";
  const avout::Bytes old_atom = old_atom_bytes("old", 1);
  const avout::Bytes old_point = avout::encode(std::string("old point"));
  {
    pqxx::connection admin(avout::testing::shared_postgres().url());
    pqxx::work work(admin);
    work.exec("CREATE TABLE " + prefix +
              "atoms (name text PRIMARY KEY, value bytea NOT NULL, version bigint NOT NULL)");
    work.exec("CREATE TABLE " + prefix +
              "ref_values (name text NOT NULL, point text NOT NULL, value bytea NOT NULL, "
              "PRIMARY KEY (name, point))");
    work.exec_params("INSERT INTO " + prefix + "atoms VALUES ($1, $2, 1)", name,
                     pqxx::binarystring(old_atom.data(), old_atom.size()));
    work.exec_params("INSERT INTO " + prefix + "ref_values VALUES ($1, 'p-1', $2)", name,
                     pqxx::binarystring(old_point.data(), old_point.size()));
    work.commit();
  }
  avout::postgres::Store store(avout::postgres::StoreOptions{
      .url = avout::testing::shared_postgres().url(), .table_prefix = prefix});
  auto cell = store.atom_state(name);
  const auto read = cell->get();
  CHECK(read.value == old_atom);
  const avout::Bytes next = old_atom_bytes("new", 2);
  REQUIRE(cell->compare_and_set(read, next));
  CHECK(cell->get().value == next);
  CHECK(psql("SELECT value IS NULL, value_text, meta FROM " + prefix + "atoms") == "t|new|2 42");

  auto data = store.reference_data(name);
  CHECK(data->get(avout::Point{"p-1"}) == old_point);
  data->set(avout::encode(std::string("new point")), avout::Point{"p-2"});
  const avout::Bytes binary = avout::encode(std::vector<long>{1, 2});
  std::vector<avout::PointValue> batch{avout::PointValue{data.get(), {"p-3"}, binary}};
  store.set_values(batch);
  const std::array<avout::PointRead, 4> reads{
      avout::PointRead{data.get(), {"p-1"}}, avout::PointRead{data.get(), {"p-2"}},
      avout::PointRead{data.get(), {"p-3"}}, avout::PointRead{data.get(), {"p-4"}}};
  const auto values = store.get_values(reads);
  REQUIRE(values.size() == 4);
  CHECK(values[0] == old_point);
  CHECK(values[1] == avout::encode(std::string("new point")));
  CHECK(values[2] == binary);
  CHECK(!values[3]);
  CHECK(psql("SELECT format FROM " + prefix + "ref_values WHERE point = 'p-3'") == "avout");
  // A second store on the migrated tables (its own connections) finds nothing to migrate.
  avout::postgres::Store again(avout::postgres::StoreOptions{
      .url = avout::testing::shared_postgres().url(), .table_prefix = prefix});
  CHECK(again.reference_data(name)->get(avout::Point{"p-1"}) == old_point);
}

TEST_CASE("concurrent swaps of a text atom stay exact in Redis and PostgreSQL") {
  avout::Client client(options());
  avout::redis::Store redis(avout::testing::shared_redis().url());
  avout::postgres::Store postgres(avout::testing::shared_postgres().url());
  for (avout::Store* store :
       {static_cast<avout::Store*>(&redis), static_cast<avout::Store*>(&postgres)}) {
    auto atom =
        client.atom<std::string>(avout::testing::unique_name("/layout", "swaps"), "", *store);
    constexpr int threads = 4;
    constexpr int swaps = 25;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&atom, t] {
        for (int i = 0; i < swaps; ++i)
          atom.swap([t](const std::string& v) { return v + static_cast<char>('a' + t); });
      });
    }
    for (auto& worker : workers) worker.join();
    const std::string final_value = atom.deref();
    CHECK(final_value.size() == static_cast<std::size_t>(threads * swaps));
    for (int t = 0; t < threads; ++t)
      CHECK(std::count(final_value.begin(), final_value.end(), 'a' + t) == swaps);
  }
}
