// Bad input and broken surroundings: each is a typed error with a clear message, and nothing
// already stored changes.
#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include "support/servers.hpp"

#include <doctest/doctest.h>

#include <pqxx/pqxx>

#include <random>

using namespace std::chrono_literals;

namespace {

std::string unique(const std::string& stem) {
  static std::mt19937_64 random{std::random_device{}()};
  return stem + std::to_string(random() % 1000000000);
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 6000ms};
}

}  // namespace

TEST_CASE("names that are empty, relative or hold '..' are InvalidName for every kind of object") {
  avout::Client client(options());
  for (const char* bad : {"", "relative", "/a/../b", "/a/", "//", "/a/./b", "/tab\there"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(client.atom<long>(bad, 0), avout::InvalidName);
    CHECK_THROWS_AS(client.ref<long>(bad, 0), avout::InvalidName);
    CHECK_THROWS_AS(client.agent<long>(bad, 0), avout::InvalidName);
    CHECK_THROWS_AS(client.lease_lock(bad), avout::InvalidName);
    CHECK_THROWS_AS(client.lock(bad), avout::InvalidName);
    CHECK_THROWS_AS(client.read_write_lock(bad), avout::InvalidName);
    // inspect too: "" used to read the folder of all refs (or agents) as a head, "x" nothing.
    CHECK_THROWS_AS(avout::inspect::ref_head(client, bad), avout::InvalidName);
    CHECK_THROWS_AS(avout::inspect::agent_head(client, bad), avout::InvalidName);
    CHECK_THROWS_AS(avout::inspect::tag_owner(client, bad), avout::InvalidName);
    CHECK_THROWS_AS(avout::inspect::atom(client, client.default_store(), bad), avout::InvalidName);
    CHECK_THROWS_AS(avout::inspect::lock_path(client, bad), avout::InvalidName);
    CHECK_THROWS_AS(avout::inspect::semaphore(client, bad), avout::InvalidName);
    CHECK_THROWS_AS(avout::inspect::election(client, bad), avout::InvalidName);
    CHECK_THROWS_AS(avout::inspect::barrier(client, bad), avout::InvalidName);
    CHECK_THROWS_AS(avout::inspect::work_queue(client, bad), avout::InvalidName);
  }
  auto bad_root = options();
  bad_root.root = "no-slash";
  CHECK_THROWS_AS(avout::Client{bad_root}, avout::InvalidName);
  auto no_chroot = options();
  no_chroot.chroot = "/" + unique("missing-chroot-");
  CHECK_THROWS_AS(avout::Client{no_chroot}, avout::NoNode);
  auto bad_retry = options();
  bad_retry.retry_limit = 0;
  CHECK_THROWS_AS(avout::Client{bad_retry}, avout::Error);
}

TEST_CASE(
    "a PostgreSQL table altered underneath gives BackendError naming it, and changes nothing") {
  const std::string prefix = unique("altered_") + "_";
  avout::postgres::Store store(avout::postgres::StoreOptions{
      .url = avout::testing::shared_postgres().url(), .table_prefix = prefix});
  avout::Client client(options());
  auto atom = client.atom<long>("/" + unique("altered-atom-"), 5, store);
  auto ref = client.ref<long>("/" + unique("altered-ref-"), 7, store);
  {
    pqxx::connection admin(avout::testing::shared_postgres().url());
    pqxx::work work(admin);
    work.exec("ALTER TABLE " + prefix + "atoms RENAME COLUMN format TO renamed");
    work.exec("ALTER TABLE " + prefix + "ref_values RENAME COLUMN format TO renamed");
    work.commit();
  }
  try {
    (void)atom.swap([](long v) { return v + 1; });
    FAIL("an altered table was used");
  } catch (const avout::BackendError& error) {
    CHECK(std::string(error.what()).find(prefix) != std::string::npos);
  }
  CHECK_THROWS_AS(client.dosync([&] { ref.alter([](long v) { return v + 1; }); }),
                  avout::BackendError);
  {
    pqxx::connection admin(avout::testing::shared_postgres().url());
    pqxx::work work(admin);
    work.exec("ALTER TABLE " + prefix + "atoms RENAME COLUMN renamed TO format");
    work.exec("ALTER TABLE " + prefix + "ref_values RENAME COLUMN renamed TO format");
    work.commit();
  }
  CHECK(atom.deref() == 5);
  CHECK(ref.deref() == 7);
}

TEST_CASE(
    "an unreachable store is BackendError for refs and agents too, and nothing is committed") {
  avout::Client client(options());
  avout::redis::Store nowhere(avout::redis::StoreOptions{
      .url = "tcp://127.0.0.1:" + std::to_string(avout::testing::free_port()),
      .connect_timeout = 300ms});
  CHECK_THROWS_AS(client.ref<long>("/" + unique("unreachable-ref-"), 1, nowhere),
                  avout::BackendError);
  CHECK_THROWS_AS(client.agent<long>("/" + unique("unreachable-agent-"), 1, nowhere),
                  avout::BackendError);
  // A transaction touching a reachable ref and writing nothing unreachable still commits.
  auto ok = client.ref<long>("/" + unique("reachable-"), 1);
  client.dosync([&] { ok.alter([](long v) { return v + 1; }); });
  CHECK(ok.deref() == 2);
}

TEST_CASE(
    "values over a store's limit are ValueTooLarge for refs and agents, before anything is "
    "written") {
  avout::Client client(options());
  const std::string huge(1100 * 1000, 'x');
  auto ref = client.ref<std::string>("/" + unique("big-ref-"), "small");
  CHECK_THROWS_AS(client.dosync([&] { ref.ref_set(huge); }), avout::ValueTooLarge);
  CHECK(ref.deref() == "small");
  CHECK_THROWS_AS(client.agent<std::string>("/" + unique("big-agent-"), huge),
                  avout::ValueTooLarge);
  auto agent = client.agent<std::string>("/" + unique("agent-"), "small");
  agent.send([&huge](const std::string&) { return huge; });
  agent.await(30s);
  REQUIRE(agent.error());
  CHECK(agent.error()->find("exceeds") != std::string::npos);
  CHECK(agent.deref() == "small");
}

TEST_CASE("a ref read as the wrong type is CodecError, never a wrong value") {
  avout::Client client(options());
  const std::string name = "/" + unique("typed-");
  auto text = client.ref<std::string>(name, "not a number");
  // The same ref asked for as another type is refused when the handle is made, by name.
  CHECK_THROWS_WITH_AS(client.ref<long>(name, 0), doctest::Contains(name.c_str()),
                       avout::CodecError);
  CHECK(text.deref() == "not a number");
}
