// Every atom, ref and agent records in ZooKeeper which store keeps its values (its scheme and
// name, never an address): a process that attaches it through another store is refused with
// avout::Mismatch naming both, before anything is read or written through the wrong store; the
// same store attaches as before. Objects made before records existed get theirs on their
// first attach, and a lost reply of the record's create still ends with the right record.
#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace std::chrono_literals;

namespace {

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 6000ms};
}

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/store-identity", stem);
}

// The Redis store the tests name "main": the shared server, keys of its own.
avout::redis::Store main_redis() {
  return avout::redis::Store(avout::redis::StoreOptions{
      .url = avout::testing::shared_redis().url() + "?name=main", .key_prefix = "avout-main:"});
}

// The data of the store record of the `kind` ("atoms", "refs", "agents") `name`.
std::string record_of(avout::Client& client, const std::string& kind, const std::string& name) {
  const auto data = client.session().get(client.options().root + "/stores/" + kind + name).data;
  return std::string(data.begin(), data.end());
}

// Runs `attach`, which must throw Mismatch naming `name` and both stores.
template <class Attach>
void require_mismatch(Attach attach, const std::string& name, const std::string& recorded,
                      const std::string& given) {
  try {
    attach();
    FAIL("attached through another store than the recorded one");
  } catch (const avout::Mismatch& error) {
    const std::string message = error.what();
    INFO(message);
    CHECK(message.find(name) != std::string::npos);
    CHECK(message.find("its values are in " + recorded) != std::string::npos);
    CHECK(message.find("opened with " + given) != std::string::npos);
  }
}

// Nothing of the atom, ref and agent `name` (below .../atom etc.) is in `store`.
void require_untouched(avout::Client& client, avout::Store& store, const std::string& name) {
  CHECK_FALSE(store.atom_state(client.atom_value_key(name + "/atom"))->get().exists());
  CHECK(store.reference_data(client.ref_value_key(name + "/ref"))->points().empty());
  CHECK(store.reference_data(client.agent_value_key(name + "/agent"))->points().empty());
}

}  // namespace

TEST_CASE("attaching through another store than the creator's is refused, in another process") {
  avout::testing::start_shared_servers();
  const std::string name = unique_name("two-processes");
  // The creator is another process: it records redis:main for each object.
  const auto codes = avout::testing::run_in_processes(
      1,
      [&](int) {
        avout::Client client(options());
        auto store = main_redis();
        auto atom = client.atom<long>(name + "/atom", 1, store);
        auto ref = client.ref<long>(name + "/ref", 2, store);
        auto agent = client.agent<long>(name + "/agent", 3, store);
        atom.reset(10);
      },
      60s);
  REQUIRE(codes == std::vector<int>{0});

  avout::testing::ThreeStores stores;
  auto& client = stores.client;
  avout::redis::Store default_redis(avout::testing::shared_redis().url());
  struct Other {
    avout::Store& store;
    std::string identity;
  };
  for (const Other& other : {Other{default_redis, "redis:default"},
                             Other{stores.postgres, "postgresql:default"},
                             Other{client.default_store(), "zookeeper:default"}}) {
    INFO(other.identity);
    require_mismatch([&] { (void)client.atom<long>(name + "/atom", 0, other.store); },
                     "atom " + name + "/atom", "redis:main", other.identity);
    require_mismatch([&] { (void)client.ref<long>(name + "/ref", 0, other.store); },
                     "ref " + name + "/ref", "redis:main", other.identity);
    require_mismatch([&] { (void)client.agent<long>(name + "/agent", 0, other.store); },
                     "agent " + name + "/agent", "redis:main", other.identity);
    if (&other.store != &client.default_store()) require_untouched(client, other.store, name);
  }
  CHECK(record_of(client, "atoms", name + "/atom") == "redis:main");
  CHECK(record_of(client, "refs", name + "/ref") == "redis:main");
  CHECK(record_of(client, "agents", name + "/agent") == "redis:main");

  // Another object of the same store, named the same, attaches and reads the creator's values.
  auto store = main_redis();
  CHECK(client.atom<long>(name + "/atom", 0, store).deref() == 10);
  CHECK(client.ref<long>(name + "/ref", 0, store).deref() == 2);
  CHECK(client.agent<long>(name + "/agent", 0, store).deref() == 3);
}

TEST_CASE("a store's name comes from its options or its URL, and is checked") {
  const std::string url = avout::testing::shared_redis().url();
  CHECK(avout::redis::Store(url).identity() == avout::StoreIdentity{"redis", "default"});
  CHECK(avout::redis::Store(url + "?name=a-b_c.1").identity().name == "a-b_c.1");
  CHECK(avout::redis::Store(avout::redis::StoreOptions{.url = url, .name = "x"}).identity().name ==
        "x");
  CHECK_THROWS_AS(avout::redis::Store(url + "?name=a/b"), avout::InvalidName);
  CHECK_THROWS_AS(avout::redis::Store(url + "?name="), avout::InvalidName);
  CHECK_THROWS_AS(avout::redis::Store(avout::redis::StoreOptions{.url = url + "?name=a", .name = "b"}),
                  avout::InvalidName);
  const std::string pg = avout::testing::shared_postgres().url();
  CHECK(avout::postgres::Store(pg).identity() == avout::StoreIdentity{"postgresql", "default"});
  CHECK(avout::postgres::Store(pg + "?name=ledger").identity().name == "ledger");
  CHECK(avout::postgres::Store("host=127.0.0.1 dbname=avout name=ledger").identity().name ==
        "ledger");
  CHECK_THROWS_AS(avout::postgres::Store(pg + "?name=a%20b"), avout::InvalidName);
  avout::Client client(options());
  CHECK(client.default_store().identity() == avout::StoreIdentity{"zookeeper", "default"});
}

TEST_CASE("two stores of one kind told apart by name refuse each other's objects") {
  avout::Client creator(options()), other(options());
  const std::string name = unique_name("names");
  auto main = main_redis();
  auto cache = avout::redis::Store(avout::testing::shared_redis().url() + "?name=cache");
  auto ref = creator.ref<std::string>(name + "/ref", "kept", main);
  require_mismatch([&] { (void)other.ref<std::string>(name + "/ref", "", cache); },
                   "ref " + name + "/ref", "redis:main", "redis:cache");
  // The same identity in another client works, and commits go through.
  auto same = other.ref<std::string>(name + "/ref", "", main);
  other.dosync([&] { same.alter([](const std::string& v) { return v + "!"; }); });
  CHECK(ref.deref() == "kept!");
}

TEST_CASE("an object made before store records gets one on its first attach") {
  avout::testing::ThreeStores stores;
  auto& client = stores.client;
  const std::string name = unique_name("old");
  (void)client.atom<long>(name + "/atom", 1, stores.postgres);
  (void)client.ref<long>(name + "/ref", 2, stores.postgres);
  (void)client.agent<long>(name + "/agent", 3, stores.postgres);
  // As an older avout left them: no record.
  for (const std::string kind : {"atom", "ref", "agent"}) {
    client.session().remove(client.options().root + "/stores/" + kind + "s" + name + "/" + kind);
  }
  avout::Client later(options());
  CHECK(later.atom<long>(name + "/atom", 0, stores.postgres).deref() == 1);
  CHECK(later.ref<long>(name + "/ref", 0, stores.postgres).deref() == 2);
  CHECK(later.agent<long>(name + "/agent", 0, stores.postgres).deref() == 3);
  CHECK(record_of(client, "atoms", name + "/atom") == "postgresql:default");
  CHECK(record_of(client, "refs", name + "/ref") == "postgresql:default");
  CHECK(record_of(client, "agents", name + "/agent") == "postgresql:default");
  require_mismatch([&] { (void)client.ref<long>(name + "/ref", 0, stores.redis); },
                   "ref " + name + "/ref", "postgresql:default", "redis:default");
}

TEST_CASE("a lost reply of the record's create still ends with the right record") {
  avout::testing::ThreeStores stores;
  auto& client = stores.client;
  const std::string name = unique_name("lost");
  for (const char* kind : {"atoms", "refs", "agents"}) {
    avout::testing::fail_next(avout::testing::ZooKeeperCall::create,
                              std::string("/stores/") + kind + name, 1, true);
  }
  auto atom = client.atom<long>(name + "/atom", 1, stores.redis);
  auto ref = client.ref<long>(name + "/ref", 2, stores.redis);
  auto agent = client.agent<long>(name + "/agent", 3, stores.redis);
  CHECK(avout::testing::failures_to_come() == 0);
  CHECK(record_of(client, "atoms", name + "/atom") == "redis:default");
  CHECK(record_of(client, "refs", name + "/ref") == "redis:default");
  CHECK(record_of(client, "agents", name + "/agent") == "redis:default");
  avout::Client other(options());
  require_mismatch([&] { (void)other.atom<long>(name + "/atom", 0, stores.postgres); },
                   "atom " + name + "/atom", "redis:default", "postgresql:default");
  CHECK(other.atom<long>(name + "/atom", 0, stores.redis).deref() == 1);
}

TEST_CASE("a store of the user's own kind is custom:default unless it says otherwise") {
  struct Own final : avout::Store {
    avout::Store& inner;
    explicit Own(avout::Store& store) : inner(store) {}
    std::string description() const override { return "own"; }
    std::size_t max_value_size() const override { return inner.max_value_size(); }
    std::unique_ptr<avout::AtomState> atom_state(const std::string& n) override {
      return inner.atom_state(n);
    }
    std::unique_ptr<avout::ReferenceData> reference_data(const std::string& n) override {
      return inner.reference_data(n);
    }
  };
  avout::testing::ThreeStores stores;
  Own own(stores.redis);
  CHECK(own.identity() == avout::StoreIdentity{"custom", "default"});
  const std::string name = unique_name("custom");
  (void)stores.client.ref<long>(name, 1, own);
  CHECK(record_of(stores.client, "refs", name) == "custom:default");
  require_mismatch([&] { (void)stores.client.ref<long>(name, 0, stores.redis); }, "ref " + name,
                   "custom:default", "redis:default");
}
