// Deleting atoms, refs, agents, locks and lease locks (Client::remove_*): every later use
// throws Deleted, the name is never reused, values are gone from every store (read from the
// store itself, not through the deleted object), a lost reply still ends removed once, and
// several processes racing a removal each see it completed before or throwing Deleted.
#include <avout/avout.hpp>

#include "records/agent_head.hpp"
#include "records/atom_envelope.hpp"
#include "records/stm_records.hpp"
#include "support/processes.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::ThreeStores;
using avout::testing::ZooKeeperCall;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/removal-test", stem);
}

const char* const store_names[] = {"zookeeper", "redis", "postgres"};

// The standard output of a shell command.
std::string shell(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) out += buffer.data();
  REQUIRE(pclose(pipe) == 0);
  return out;
}

// Every Redis key whose name holds `name`, with its serialized value (redis-cli DUMP).
std::string redis_keys_and_values(const std::string& name) {
  const std::string cli = "redis-cli -p " + std::to_string(avout::testing::shared_redis().port());
  return shell(cli + " --scan --pattern '*" + name + "*' | while read -r key; do echo \"$key\"; " +
               cli + " --no-raw DUMP \"$key\"; done");
}

// Everything the PostgreSQL store's database holds, as pg_dump prints it.
std::string postgres_dump() {
  return shell("pg_dump --data-only '" + avout::testing::shared_postgres().url() + "'");
}

// Whether a pg_dump holds `text`, as text or inside a bytea (printed in hex).
bool dump_holds(const std::string& dump, const std::string& text) {
  std::string hex;
  for (const unsigned char c : text) {
    static const char digits[] = "0123456789abcdef";
    hex += digits[c >> 4];
    hex += digits[c & 15];
  }
  return dump.find(text) != std::string::npos || dump.find(hex) != std::string::npos;
}

// What the store holds for the ref or agent `key`, asked of the store itself.
std::size_t stored_points(avout::Store& store, const std::string& key) {
  return store.reference_data(key)->points().size();
}

}  // namespace

TEST_CASE("a removed ref throws Deleted for every use and its values leave every store") {
  ThreeStores stores;
  auto& client = stores.client;
  for (int i = 0; i < 3; ++i) {
    CAPTURE(store_names[i]);
    avout::Store& store = stores.store(i);
    const std::string name = unique_name("ref");
    auto ref = client.ref<long>(name, 1, store);
    client.dosync([&] { ref.alter([](long v) { return v + 1; }); });
    REQUIRE(stored_points(store, client.ref_value_key(name)) > 0);

    CHECK(client.remove_ref(name, store));
    CHECK_THROWS_AS((void)ref.deref(), avout::Deleted);
    CHECK_THROWS_AS(client.dosync([&] { return ref.deref(); }), avout::Deleted);
    CHECK_THROWS_AS(client.dosync([&] { ref.ref_set(5); }), avout::Deleted);
    CHECK_THROWS_AS(client.dosync([&] { ref.alter([](long v) { return v + 1; }); }),
                    avout::Deleted);
    CHECK_THROWS_AS(client.dosync([&] { ref.ensure(); }), avout::Deleted);
    CHECK_THROWS_AS(client.dosync([&] { ref.commute([](long v) { return v + 1; }); }),
                    avout::Deleted);
    CHECK_THROWS_AS(client.ref<long>(name, 0, store), avout::Deleted);
    CHECK_FALSE(client.remove_ref(name, store));  // removed already: a no-op
    CHECK_NOTHROW((void)client.gc({store}));      // gc reads the tombstone as naming nothing

    CHECK(stored_points(store, client.ref_value_key(name)) == 0);
    const auto head = client.session().get(client.options().root + "/stm/refs" + name);
    CHECK(avout::detail::is_head_tombstone(head.data));
  }
}

TEST_CASE("redis-cli and pg_dump find no value of removed atoms, refs and agents") {
  ThreeStores stores;
  auto& client = stores.client;
  // Short (no compression in a Redis dump) and unique to this run.
  const std::string marker =
      "gone-" + unique_name("").substr(std::string("/removal-test/-").size());
  const std::string base = unique_name("dumped");
  for (int i = 1; i < 3; ++i) {
    avout::Store& store = stores.store(i);
    const std::string stem = base + "/" + store_names[i];
    auto ref = client.ref<std::string>(stem + "-ref", marker, store);
    client.dosync([&] { ref.ref_set(marker + "2"); });
    (void)client.atom<std::string>(stem + "-atom", marker, store);
    auto agent = client.agent<std::string>(stem + "-agent", marker, store);
  }
  // The reads can see the values: before the removals they find them.
  REQUIRE(redis_keys_and_values(base).find(marker) != std::string::npos);
  REQUIRE(dump_holds(postgres_dump(), marker));
  for (int i = 1; i < 3; ++i) {
    const std::string stem = base + "/" + store_names[i];
    CHECK(client.remove_ref(stem + "-ref", stores.store(i)));
    CHECK(client.remove_atom(stem + "-atom", stores.store(i)));
    CHECK(client.remove_agent(stem + "-agent", stores.store(i)));
  }
  const std::string in_redis = redis_keys_and_values(base);
  CHECK(in_redis.find(marker) == std::string::npos);
  CHECK(in_redis.find("-ref") == std::string::npos);    // no key of the ref is left
  CHECK(in_redis.find("-agent") == std::string::npos);  // nor of the agent
  CHECK_FALSE(dump_holds(postgres_dump(), marker));
}

TEST_CASE("another client's handle of a removed ref and a fresh one both see Deleted") {
  ThreeStores first;
  ThreeStores second;
  const std::string name = unique_name("ref-elsewhere");
  auto mine = first.client.ref<long>(name, 7, first.redis);
  auto theirs = second.client.ref<long>(name, 7, second.redis);
  CHECK(theirs.deref() == 7);
  CHECK(first.client.remove_ref(name, first.redis));
  CHECK_THROWS_AS((void)theirs.deref(), avout::Deleted);
  CHECK_THROWS_AS(second.client.dosync([&] { theirs.ref_set(1); }), avout::Deleted);
  CHECK_THROWS_AS((void)mine.deref(), avout::Deleted);
}

TEST_CASE("removing what never existed is a no-op that returns false") {
  ThreeStores stores;
  auto& client = stores.client;
  CHECK_FALSE(client.remove_ref(unique_name("never")));
  CHECK_FALSE(client.remove_atom(unique_name("never")));
  CHECK_FALSE(client.remove_atom(unique_name("never"), stores.redis));
  CHECK_FALSE(client.remove_agent(unique_name("never")));
  CHECK_FALSE(client.remove_lock(unique_name("never")));
  CHECK_FALSE(client.remove_read_write_lock(unique_name("never")));
  CHECK_FALSE(client.remove_lease(unique_name("never")));
}

TEST_CASE("a dosync that read a ref the removal then deletes throws Deleted, once") {
  ThreeStores stores;
  auto& client = stores.client;
  const std::string name = unique_name("ref-racing");
  auto ref = client.ref<long>(name, 1, stores.postgres);
  int attempts = 0;
  CHECK_THROWS_AS(client.dosync([&] {
    ++attempts;
    const long seen = ref.deref();
    if (attempts == 1) {
      ThreeStores remover;
      CHECK(remover.client.remove_ref(name, remover.postgres));
    }
    ref.ref_set(seen + 1);
  }),
                  avout::Deleted);
  CHECK(attempts <= 2);  // the failed commit's retry reads the tombstone: no retry loop
  CHECK(stored_points(stores.postgres, client.ref_value_key(name)) == 0);
}

TEST_CASE("a removed atom throws Deleted for every use and holds no value in any store") {
  ThreeStores stores;
  auto& client = stores.client;
  for (int i = 0; i < 3; ++i) {
    CAPTURE(store_names[i]);
    avout::Store& store = stores.store(i);
    const std::string name = unique_name("atom");
    auto atom = client.atom<std::string>(name, "secret", store);
    std::atomic<int> fired{0};
    atom.add_watch("w", [&](const std::string&, const std::string&) { ++fired; });

    CHECK(client.remove_atom(name, store));
    CHECK_THROWS_AS((void)atom.deref(), avout::Deleted);
    CHECK_THROWS_AS(atom.swap([](std::string v) { return v + "!"; }), avout::Deleted);
    CHECK_THROWS_AS(atom.reset("again"), avout::Deleted);
    CHECK_THROWS_AS(atom.compare_and_set("secret", "x"), avout::Deleted);
    CHECK_THROWS_AS(client.atom<std::string>(name, "new", store), avout::Deleted);
    CHECK_FALSE(client.remove_atom(name, store));

    // The cell, read from the store itself, holds the tombstone alone.
    const bool zookeeper_held = i == 0;
    auto cell = store.atom_state(zookeeper_held ? name : client.atom_value_key(name));
    const auto stored = cell->get();
    CHECK(avout::detail::is_atom_tombstone(stored.value));
    CHECK(std::string(stored.value.begin(), stored.value.end()).find("secret") ==
          std::string::npos);
    CHECK(fired == 0);  // a watch never fires with a deleted value
  }
}

TEST_CASE("a removed agent drops its queued sends, refuses new ones and erases its value") {
  ThreeStores stores;
  auto& client = stores.client;
  for (int i = 0; i < 3; ++i) {
    CAPTURE(store_names[i]);
    avout::Store& store = stores.store(i);
    const std::string name = unique_name("agent");
    auto agent = client.agent<long>(name, 0, store);
    std::atomic<bool> running{false};
    std::atomic<bool> release{false};
    agent.send_off([&](long v) {
      running = true;
      while (!release) std::this_thread::sleep_for(5ms);
      return v + 1;
    });
    for (int k = 0; k < 5; ++k) agent.send([](long v) { return v + 1; });
    while (!running) std::this_thread::sleep_for(5ms);

    CHECK(client.remove_agent(name, store));
    release = true;  // its batch's commit now fails on the tombstone
    CHECK_THROWS_AS(agent.await(), avout::Deleted);
    CHECK_THROWS_AS(agent.send([](long v) { return v + 1; }), avout::Deleted);
    CHECK_THROWS_AS(client.dosync([&] { agent.send([](long v) { return v + 1; }); }),
                    avout::Deleted);
    CHECK_THROWS_AS((void)agent.deref(), avout::Deleted);
    CHECK_THROWS_AS(client.agent<long>(name, 0, store), avout::Deleted);
    CHECK_FALSE(client.remove_agent(name, store));

    CHECK(stored_points(store, client.agent_value_key(name)) == 0);
    const auto head = client.session().get(client.options().root + "/agents/heads" + name);
    CHECK(avout::detail::is_agent_tombstone(head.data));
  }
}

TEST_CASE("a held or awaited lock or lease is not removed; a free one is") {
  ThreeStores stores;
  auto& client = stores.client;
  const std::string name = unique_name("lock");
  auto lock = client.lock(name);
  lock.lock();
  CHECK_THROWS_AS(client.remove_lock(name), avout::NotEmpty);
  CHECK(lock.is_held());
  lock.unlock();
  CHECK(client.remove_lock(name));
  CHECK_FALSE(client.session().exists(client.options().root + "/locks" + name).has_value());

  const std::string rw_name = unique_name("rwlock");
  auto rw = client.read_write_lock(rw_name);
  rw.lock_shared();
  CHECK_THROWS_AS(client.remove_read_write_lock(rw_name), avout::NotEmpty);
  rw.unlock_shared();
  CHECK(client.remove_read_write_lock(rw_name));

  const std::string lease_name = unique_name("lease");
  auto leases = client.lease_lock(lease_name);
  auto lease = leases.lock("k", {.duration = 10s, .max_wait = 1s});
  CHECK_THROWS_AS(client.remove_lease(lease_name), avout::NotEmpty);
  CHECK(leases.unlock(lease));
  CHECK(client.remove_lease(lease_name));
  CHECK_FALSE(client.session().exists(client.options().root + "/leases" + lease_name).has_value());
}

TEST_CASE("a lock or lease handle opened before the removal still works: its nodes come back") {
  ThreeStores stores;
  auto& client = stores.client;
  const std::string name = unique_name("reopened");
  auto lock = client.lock(name);
  auto rw = client.read_write_lock(name);
  auto leases = client.lease_lock(name);
  CHECK(client.remove_lock(name));
  CHECK(client.remove_read_write_lock(name));
  CHECK(client.remove_lease(name));
  CHECK(lock.try_lock_for(5s));
  lock.unlock();
  CHECK(rw.try_lock_for(5s));
  rw.unlock();
  CHECK(rw.try_lock_shared_for(5s));
  rw.unlock_shared();
  auto lease = leases.lock("k", {.duration = 5s, .max_wait = 1s});
  CHECK(leases.unlock(lease));
}

TEST_CASE("a removal whose reply was lost still ends removed exactly once") {
  ThreeStores stores;
  auto& client = stores.client;
  const std::string ref_name = unique_name("lost-ref");
  auto ref = client.ref<long>(ref_name, 1, stores.redis);
  avout::testing::fail_next(ZooKeeperCall::multi, "/stm/refs" + ref_name, 1, true);
  CHECK(client.remove_ref(ref_name, stores.redis));
  CHECK(avout::testing::failures_to_come() == 0);
  CHECK_THROWS_AS((void)ref.deref(), avout::Deleted);
  CHECK(stored_points(stores.redis, client.ref_value_key(ref_name)) == 0);
  CHECK_FALSE(client.remove_ref(ref_name, stores.redis));

  const std::string atom_name = unique_name("lost-atom");
  auto atom = client.atom<long>(atom_name, 1);
  avout::testing::fail_next(ZooKeeperCall::set, "/atoms" + atom_name, 1, true);
  CHECK(client.remove_atom(atom_name));
  CHECK(avout::testing::failures_to_come() == 0);
  CHECK_THROWS_AS((void)atom.deref(), avout::Deleted);

  const std::string agent_name = unique_name("lost-agent");
  auto agent = client.agent<long>(agent_name, 1, stores.postgres);
  avout::testing::fail_next(ZooKeeperCall::set, "/agents/heads" + agent_name, 1, true);
  CHECK(client.remove_agent(agent_name, stores.postgres));
  CHECK(avout::testing::failures_to_come() == 0);
  CHECK_THROWS_AS(agent.send([](long v) { return v + 1; }), avout::Deleted);
  CHECK(stored_points(stores.postgres, client.agent_value_key(agent_name)) == 0);
}

namespace {

// One line of a worker's log: which object, when the call ran, and how it ended.
struct Call {
  std::string object;
  std::int64_t start = 0;
  std::int64_t end = 0;
  bool deleted = false;  // threw Deleted (else it completed)
  int thread = 0;
};

std::vector<Call> read_calls(const std::filesystem::path& file) {
  std::vector<Call> calls;
  std::ifstream in(file);
  Call call;
  while (in >> call.object >> call.start >> call.end >> call.deleted >> call.thread) {
    calls.push_back(call);
  }
  return calls;
}

}  // namespace

TEST_CASE("processes racing removals see every call complete before them or throw Deleted") {
  avout::testing::start_shared_servers();
  const auto folder =
      std::filesystem::temp_directory_path() / ("avout-removal-" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  const std::string base = unique_name("race");
  constexpr int workers = 3;
  constexpr int threads = 2;
  // Objects: a ref, an atom and an agent in each store.
  auto object = [&](const std::string& kind, int store) {
    return base + "/" + kind + "-" + std::to_string(store);
  };
  const auto codes = avout::testing::run_in_processes(
      workers + 1,
      [&](int index) {
        ThreeStores stores;
        auto& client = stores.client;
        if (index == 0) {  // the remover: makes the objects, lets the workers start, removes
          for (int s = 0; s < 3; ++s) {
            (void)client.ref<long>(object("ref", s), 0, stores.store(s));
            (void)client.atom<long>(object("atom", s), 0, stores.store(s));
            (void)client.agent<long>(object("agent", s), 0, stores.store(s));
          }
          std::ofstream(folder / "ready") << "go\n";
          std::this_thread::sleep_for(avout::testing::scaled(600ms));
          std::ofstream log(folder / "removals");
          for (int s = 0; s < 3; ++s) {
            for (const std::string kind : {"ref", "atom", "agent"}) {
              const std::int64_t start = avout::testing::now_us();
              const bool removed =
                  kind == "ref"    ? client.remove_ref(object(kind, s), stores.store(s))
                  : kind == "atom" ? client.remove_atom(object(kind, s), stores.store(s))
                                   : client.remove_agent(object(kind, s), stores.store(s));
              if (!removed) throw std::runtime_error("not removed: " + object(kind, s));
              log << object(kind, s) << " " << start << " " << avout::testing::now_us() << " 1 0\n";
            }
          }
          return;
        }
        if (!avout::testing::wait_for_file(folder / "ready", 60s))
          throw std::runtime_error("no go");
        std::vector<std::thread> running;
        std::vector<std::string> logs(threads);
        for (int t = 0; t < threads; ++t) {
          running.emplace_back([&, t] {
            std::ostringstream log;
            std::map<std::string, bool> gone;
            while (gone.size() < 9) {
              for (int s = 0; s < 3; ++s) {
                for (const std::string kind : {"ref", "atom", "agent"}) {
                  const std::string name = object(kind, s);
                  if (gone.count(name)) continue;
                  const std::int64_t start = avout::testing::now_us();
                  bool deleted = false;
                  try {
                    if (kind == "ref") {
                      auto ref = client.ref<long>(name, 0, stores.store(s));
                      client.dosync([&] { ref.alter([](long v) { return v + 1; }); });
                    } else if (kind == "atom") {
                      auto atom = client.atom<long>(name, 0, stores.store(s));
                      atom.swap([](long v) { return v + 1; });
                    } else {
                      auto agent = client.agent<long>(name, 0, stores.store(s));
                      agent.send([](long v) { return v + 1; });
                      agent.await();
                    }
                  } catch (const avout::Deleted&) {
                    deleted = true;
                    gone[name] = true;
                  }
                  log << name << " " << start << " " << avout::testing::now_us() << " " << deleted
                      << " " << t << "\n";
                }
              }
            }
            logs[static_cast<std::size_t>(t)] = log.str();
          });
        }
        for (auto& thread : running) thread.join();
        std::ofstream out(folder / ("calls-" + std::to_string(index)));
        for (const auto& log : logs) out << log;
      },
      avout::testing::scaled(240s));
  for (const int code : codes) CHECK(code == 0);

  std::map<std::string, Call> removals;
  for (const auto& removal : read_calls(folder / "removals")) removals[removal.object] = removal;
  REQUIRE(removals.size() == 9);
  std::size_t completed = 0;
  std::size_t refused = 0;
  for (int w = 1; w <= workers; ++w) {
    std::map<std::pair<int, std::string>, bool> seen_deleted;
    for (const auto& call : read_calls(folder / ("calls-" + std::to_string(w)))) {
      CAPTURE(call.object);
      const Call& removal = removals.at(call.object);
      auto& seen = seen_deleted[{call.thread, call.object}];
      if (call.deleted) {
        ++refused;
        CHECK(call.end > removal.start);  // Deleted only once the removal had begun
        seen = true;
      } else {
        ++completed;
        CHECK(call.start < removal.end);  // completed: it began before the removal ended
        CHECK_FALSE(seen);                // nothing resurrected after a Deleted
      }
    }
  }
  CHECK(completed > 0);
  CHECK(refused == workers * threads * 9);

  // Nothing came back and no value is left in any store.
  ThreeStores stores;
  auto& client = stores.client;
  for (int s = 0; s < 3; ++s) {
    CHECK_THROWS_AS(client.ref<long>(object("ref", s), 0, stores.store(s)), avout::Deleted);
    CHECK_THROWS_AS(client.atom<long>(object("atom", s), 0, stores.store(s)), avout::Deleted);
    CHECK_THROWS_AS(client.agent<long>(object("agent", s), 0, stores.store(s)), avout::Deleted);
    CHECK(stored_points(stores.store(s), client.ref_value_key(object("ref", s))) == 0);
    CHECK(stored_points(stores.store(s), client.agent_value_key(object("agent", s))) == 0);
  }
  std::filesystem::remove_all(folder);
}
