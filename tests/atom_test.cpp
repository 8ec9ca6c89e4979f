// Distributed atoms against real servers, in ZooKeeper, Redis and PostgreSQL stores.
#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>
#include <avout/zookeeper.hpp>

#include "base/unique_ids.hpp"  // white-box: the process's id source
#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

enum class StoreKind { zookeeper, redis, postgres };

const char* kind_name(StoreKind kind) {
  switch (kind) {
    case StoreKind::zookeeper: return "zookeeper";
    case StoreKind::redis: return "redis";
    case StoreKind::postgres: return "postgres";
  }
  return "?";
}

// A client plus one store of the kind under test, as each process of a test makes them.
struct Setup {
  avout::Client client;
  std::unique_ptr<avout::Store> own_store;

  explicit Setup(StoreKind kind)
      : client(avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                                    .session_timeout = 6000ms}) {
    if (kind == StoreKind::redis) {
      own_store = std::make_unique<avout::redis::Store>(avout::testing::shared_redis().url());
    } else if (kind == StoreKind::postgres) {
      own_store = std::make_unique<avout::postgres::Store>(avout::testing::shared_postgres().url());
    }
  }
  avout::Store& store() { return own_store ? *own_store : client.default_store(); }
  /// The store's cell of the atom `name` of this client, read or written around the atom.
  std::unique_ptr<avout::AtomState> cell(const std::string& name) {
    return store().atom_state(own_store ? client.atom_value_key(name) : name);
  }
};

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/atom-test", stem);
}

const StoreKind all_kinds[] = {StoreKind::zookeeper, StoreKind::redis, StoreKind::postgres};

// Starts the shared servers in the parent, before any fork, so children only connect.
void start_servers() {
  (void)avout::testing::shared_zookeeper();
  (void)avout::testing::shared_redis();
  (void)avout::testing::shared_postgres();
}

}  // namespace

TEST_CASE("eight processes swapping +1 five hundred times each end at exactly 4000") {
  start_servers();
  for (StoreKind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    const std::string name = unique_name("counter");
    const auto codes = avout::testing::run_in_processes(
        8,
        [&](int) {
          Setup setup(kind);
          auto counter = setup.client.atom<long>(name, 0, setup.store());
          for (int i = 0; i < 500; ++i) counter.swap([](long value) { return value + 1; });
        },
        scaled(300s));
    CHECK(codes == std::vector<int>(8, 0));
    Setup setup(kind);
    CHECK(setup.client.atom<long>(name, 0, setup.store()).deref() == 4000);
  }
}

TEST_CASE("concurrent creators write the initial value exactly once") {
  start_servers();
  for (StoreKind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    const std::string name = unique_name("created");
    const auto codes = avout::testing::run_in_processes(
        8,
        [&](int index) {
          Setup setup(kind);
          (void)setup.client.atom<long>(name, 100 + index, setup.store());
        },
        scaled(60s));
    CHECK(codes == std::vector<int>(8, 0));
    Setup setup(kind);
    const auto stored = avout::inspect::atom(setup.client, setup.store(), name);
    REQUIRE(stored.has_value());
    CHECK(stored->writes == 1);
    const long value = setup.client.atom<long>(name, -1, setup.store()).deref();
    CHECK(value >= 100);
    CHECK(value < 108);
  }
}

TEST_CASE("reset, compare_and_set, swap_vals and reset_vals return what the atom held") {
  start_servers();
  for (StoreKind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    Setup setup(kind);
    auto text = setup.client.atom<std::string>(unique_name("text"), "a", setup.store());
    CHECK(*text == "a");
    CHECK(text.reset("b") == "b");
    CHECK_FALSE(text.compare_and_set("a", "c"));
    CHECK(text.deref() == "b");
    CHECK(text.compare_and_set("b", "c"));
    CHECK(text.swap_vals([](const std::string& s, const std::string& tail) { return s + tail; },
                         std::string("d")) == std::pair<std::string, std::string>{"c", "cd"});
    CHECK(text.reset_vals("z") == std::pair<std::string, std::string>{"cd", "z"});
    auto list = setup.client.atom<std::vector<int>>(unique_name("list"), {}, setup.store());
    list.swap(
        [](std::vector<int> v, int x) {
          v.push_back(x);
          return v;
        },
        7);
    CHECK(list.deref() == std::vector<int>{7});
  }
}

TEST_CASE("a rejected value throws ValidationError and changes nothing") {
  start_servers();
  for (StoreKind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    Setup setup(kind);
    auto balance = setup.client.atom<long>(unique_name("validated"), 5, setup.store());
    balance.set_validator([](const long& v) { return v >= 0; });
    CHECK_THROWS_AS(balance.swap([](long v) { return v - 10; }), avout::ValidationError);
    CHECK_THROWS_AS(balance.reset(-1), avout::ValidationError);
    CHECK(balance.deref() == 5);
    CHECK(balance.swap([](long v) { return v - 5; }) == 0);
    CHECK_THROWS_AS(balance.set_validator([](const long& v) { return v > 0; }),
                    avout::ValidationError);
  }
}

TEST_CASE("a watch sees changes made by another process, with old and new values") {
  start_servers();
  for (StoreKind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    const std::string name = unique_name("watched");
    avout::testing::StartSignal go;
    avout::testing::ChildProcess child(0, [&](int) {
      go.wait();
      Setup other(kind);
      auto atom = other.client.atom<long>(name, 0, other.store());
      for (int i = 0; i < 3; ++i) {
        atom.swap([](long v) { return v + 1; });
        std::this_thread::sleep_for(100ms);
      }
    });
    Setup setup(kind);
    auto watched = setup.client.atom<long>(name, 0, setup.store());
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<std::pair<long, long>> seen;
    watched.add_watch("log", [&](const long& old_value, const long& new_value) {
      std::lock_guard lock(mutex);
      seen.emplace_back(old_value, new_value);
      changed.notify_all();
    });
    watched.add_watch("thrower", [](const long&, const long&) {
      throw std::runtime_error("a watch that throws is reported, not fatal");
    });
    go.release();
    const std::vector<int> codes{child.wait(scaled(60s))};
    REQUIRE(codes == std::vector<int>{0});
    std::unique_lock lock(mutex);
    REQUIRE(changed.wait_for(lock, scaled(10s),
                             [&] { return !seen.empty() && seen.back().second == 3; }));
    long previous = 0;
    for (auto [old_value, new_value] : seen) {  // coalesced or not, a chain from 0 to 3
      CHECK(old_value == previous);
      CHECK(new_value > old_value);
      previous = new_value;
    }
    lock.unlock();
    watched.remove_watch("log");
    watched.remove_watch("thrower");
  }
}

TEST_CASE("bytes that are not an atom value give CodecError") {
  start_servers();
  for (StoreKind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    Setup setup(kind);
    const std::string name = unique_name("garbage");
    auto state = setup.cell(name);
    REQUIRE(state->compare_and_set(avout::Versioned{}, avout::to_bytes("not an envelope")));
    CHECK_THROWS_AS(setup.client.atom<long>(name, 0, setup.store()), avout::CodecError);

    const std::string typed = unique_name("typed");
    auto text = setup.client.atom<std::string>(typed, "hello", setup.store());
    auto as_number = setup.client.atom<long>(typed, 0, setup.store());
    CHECK_THROWS_AS(as_number.deref(), avout::CodecError);
  }
}

TEST_CASE("a value over the store's limit is ValueTooLarge and nothing is written") {
  start_servers();
  Setup setup(StoreKind::zookeeper);
  auto big = setup.client.atom<std::string>(unique_name("big"), "small");
  CHECK_THROWS_AS(big.reset(std::string(2 * 1000 * 1000, 'x')), avout::ValueTooLarge);
  CHECK(big.deref() == "small");
}

TEST_CASE("names that are not absolute clean paths are InvalidName") {
  start_servers();
  Setup setup(StoreKind::zookeeper);
  for (const char* bad : {"", "relative", "/a/../b", "/trailing/", "//double"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(setup.client.atom<long>(bad, 0), avout::InvalidName);
  }
}

TEST_CASE("an atom whose ZooKeeper is down fails with ConnectionLoss, not a hang") {
  avout::testing::ZooKeeperServer server;
  avout::Client client(avout::ClientOptions{
      .hosts = server.connect_string(), .session_timeout = 2000ms, .connect_timeout = 5000ms});
  auto counter = client.atom<long>("/down-counter", 1);
  server.stop();
  const auto started = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(counter.swap([](long v) { return v + 1; }), avout::ConnectionLoss);
  CHECK(std::chrono::steady_clock::now() - started < scaled(20s));
  server.start();
}

TEST_CASE("processes forked after their parent wrote an atom draw different writer ids") {
  // A generator state copied by fork() would let one process "resolve" a lost reply with a
  // sibling's write (found by the fault suite: a doubled value, a lost increment).
  (void)avout::detail::unique_writer_id();  // the parent's generator is seeded now
  const auto path = std::filesystem::temp_directory_path() /
                    ("avout-writer-ids-" + std::to_string(avout::detail::unique_writer_id()));
  std::filesystem::create_directories(path);
  const auto codes = avout::testing::run_in_processes(
      3,
      [&](int index) {
        std::ofstream(path / std::to_string(index)) << avout::detail::unique_writer_id();
      },
      scaled(30s));
  CHECK(codes == std::vector<int>(3, 0));
  std::set<std::uint64_t> ids;
  for (int index = 0; index < 3; ++index) {
    std::uint64_t id = 0;
    std::ifstream(path / std::to_string(index)) >> id;
    ids.insert(id);
  }
  std::filesystem::remove_all(path);
  CHECK(ids.size() == 3);
}

TEST_CASE("atoms whose names nest inside each other both work, whichever is made first") {
  start_servers();
  for (StoreKind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    Setup setup(kind);
    const std::string inner_first = unique_name("nested");
    auto inner = setup.client.atom<long>(inner_first + "/inner", 1, setup.store());
    auto outer = setup.client.atom<long>(inner_first, 2, setup.store());
    CHECK(inner.swap([](long v) { return v + 10; }) == 11);
    CHECK(outer.swap([](long v) { return v + 20; }) == 22);

    const std::string outer_first = unique_name("nested");
    auto top = setup.client.atom<long>(outer_first, 3, setup.store());
    auto below = setup.client.atom<long>(outer_first + "/below", 4, setup.store());
    CHECK(top.swap([](long v) { return v + 30; }) == 33);
    CHECK(below.swap([](long v) { return v + 40; }) == 44);
    CHECK(inner.deref() == 11);
    CHECK(outer.deref() == 22);
  }
}

TEST_CASE("atoms of two deployments sharing one Redis or PostgreSQL never see each other") {
  start_servers();
  for (StoreKind kind : all_kinds) {
    const std::string store_kind = kind_name(kind);
    CAPTURE(store_kind);
    const std::string deployment = unique_name("deployment");
    auto client_of = [&](const std::string& root) {
      return avout::Client(
          avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                               .session_timeout = 6000ms,
                               .root = deployment + root});
    };
    Setup shared(kind);  // the one Redis or PostgreSQL both deployments use
    avout::Client first = client_of("/first");
    avout::Client second = client_of("/second");
    avout::Store& first_store =
        kind == StoreKind::zookeeper ? first.default_store() : shared.store();
    avout::Store& second_store =
        kind == StoreKind::zookeeper ? second.default_store() : shared.store();

    auto mine = first.atom<long>("/jobs", 1, first_store);
    auto theirs = second.atom<long>("/jobs", 2, second_store);
    CHECK(theirs.deref() == 2);
    mine.reset(10);
    CHECK(theirs.deref() == 2);
    theirs.swap([](long value) { return value + 1; });
    CHECK(mine.deref() == 10);
    CHECK(theirs.deref() == 3);
  }
}
