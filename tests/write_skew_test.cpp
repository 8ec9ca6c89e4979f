// Write skew, the classic on-call doctors (docs/transactions.md, "Isolation"; issue 40 item 3):
// refs x and y start at 1 and 1; each transaction reads both and, when x + y >= 2, takes its
// own doctor off call (sets its ref to 0) without ensuring the other. Many threads in 3 real
// processes run one such transaction each per round, all rounds meeting at a Barrier; process
// 0 checks x + y in a dosync after every round and resets both. In the default
// (serializable) mode every read-write commit checks every ref it read, so x + y >= 1 after
// every round: also when the attempt ran synced (the thread's previous dosync was read-only),
// and with the refs in Redis and PostgreSQL. In snapshot mode (Clojure's) write skew is
// allowed: the test only counts it, and checks that ensuring both refs rules it out.
#include <avout/avout.hpp>

#include "support/dosync_in.hpp"
#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <latch>
#include <optional>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::dosync_in;
using avout::testing::scaled;
namespace fs = std::filesystem;

namespace {

constexpr int processes = 3;
constexpr int threads = 4;  // per process: doctors x and y alternate

// Where the two doctors live and how each skew transaction runs.
struct Setup {
  int rounds = 12;
  int x_store = 0;  // ThreeStores::store(index): 0 ZooKeeper, 1 Redis, 2 PostgreSQL
  int y_store = 0;
  std::optional<avout::Isolation> isolation{};  // per dosync; empty: the client's default
  avout::Isolation client_isolation = avout::Isolation::serializable;  // ClientOptions's
  bool ensure = false;  // ensure both refs before writing
  // What the thread's previous dosync did: false: wrote (the next attempt is validated),
  // true: read only (the next read-write attempt runs synced). Both alternate by round when
  // `alternate` is set.
  bool read_only_before = false;
  bool alternate = false;
};

// One process: its threads run one skew transaction per round; process 0 checks and resets
// the doctors between rounds and writes "<rounds> <skews>" to `result`.
void doctors_process(int index, const Setup& setup, const std::string& prefix,
                     const fs::path& result) {
  avout::testing::ThreeStores stores(std::chrono::milliseconds(6000), setup.client_isolation);
  auto x = stores.client.ref<long>(prefix + "/x", 1, stores.store(setup.x_store));
  auto y = stores.client.ref<long>(prefix + "/y", 1, stores.store(setup.y_store));
  std::vector<avout::Ref<long>> scratch;  // each thread's own ref, for a dosync that writes
  for (int thread = 0; thread < threads; ++thread) {
    scratch.push_back(stores.client.ref<long>(
        prefix + "/scratch-" + std::to_string(index) + "-" + std::to_string(thread), 0));
  }
  auto barrier = stores.client.barrier(prefix + "/rounds", processes);
  int skews = 0;
  std::atomic<int> errors{0};
  for (int round = 0; round < setup.rounds; ++round) {
    // Phase 1: process 0 checks the last round and resets; everybody waits for it.
    barrier.enter();
    if (index == 0) {
      const bool skewed = dosync_in(stores.client, setup.isolation, [&] {
        const bool both_off = x.deref() + y.deref() < 1;
        x.ref_set(1);
        y.ref_set(1);
        return both_off;
      });
      if (skewed) ++skews;
    }
    barrier.leave();
    // Phase 2: every thread prepares, then all run their skew transaction at once.
    const bool read_only_before = setup.alternate ? round % 2 == 1 : setup.read_only_before;
    std::latch start(threads);
    std::vector<std::thread> running;
    for (int thread = 0; thread < threads; ++thread) {
      running.emplace_back([&, thread] {
        try {
          auto& mine = thread % 2 == 0 ? x : y;
          if (read_only_before) {
            (void)dosync_in(stores.client, setup.isolation, [&] { return x.deref(); });
          } else {
            dosync_in(stores.client, setup.isolation, [&] {
              scratch[static_cast<std::size_t>(thread)].alter([](long v) { return v + 1; });
            });
          }
          start.arrive_and_wait();
          dosync_in(stores.client, setup.isolation, [&] {
            const long on_call = setup.ensure ? x.ensure() + y.ensure() : x.deref() + y.deref();
            std::this_thread::sleep_for(2ms);  // the others read before this one commits
            if (on_call >= 2) mine.ref_set(0);
          });
        } catch (const std::exception& error) {
          std::fprintf(stderr, "process %d thread %d: %s\n", index, thread, error.what());
          ++errors;
        }
      });
    }
    for (auto& thread : running) thread.join();
    if (errors > 0) throw std::runtime_error("a skew transaction failed");
  }
  barrier.enter();  // the last round's check
  if (index == 0) {
    if (dosync_in(stores.client, setup.isolation, [&] { return x.deref() + y.deref() < 1; }))
      ++skews;
    std::ofstream(result) << setup.rounds << ' ' << skews << '\n';
  }
  barrier.leave();
}

// Runs the rounds of `setup` in 3 processes; returns in how many rounds both doctors went off
// call.
int skewed_rounds(const Setup& setup) {
  avout::testing::start_shared_servers();
  const std::string prefix = avout::testing::unique_name("/skew-test", "doctors");
  const fs::path result =
      fs::temp_directory_path() / ("avout-skew" + prefix.substr(prefix.rfind('-')));
  const auto codes = avout::testing::run_in_processes(
      processes, [&](int index) { doctors_process(index, setup, prefix, result); }, scaled(90s));
  REQUIRE(codes == std::vector<int>(processes, 0));
  std::ifstream in(result);
  int rounds = 0;
  int skews = -1;
  in >> rounds >> skews;
  fs::remove(result);
  REQUIRE(rounds == setup.rounds);
  return skews;
}

}  // namespace

TEST_CASE("default mode: no write skew between doctors in ZooKeeper, validated attempts") {
  CHECK(skewed_rounds({}) == 0);
}

TEST_CASE("default mode: no write skew when each skew attempt runs synced") {
  // Each thread's previous dosync was read-only, so its read-write attempt reads the synced
  // way (docs/transactions.md, "Isolation") and must still check every head it read.
  CHECK(skewed_rounds({.read_only_before = true}) == 0);
}

TEST_CASE("default mode: no write skew between a Redis doctor and a PostgreSQL doctor") {
  CHECK(skewed_rounds({.x_store = 1, .y_store = 2, .alternate = true}) == 0);
}

TEST_CASE("a client in snapshot mode: a dosync asking for serializable has no write skew") {
  CHECK(skewed_rounds({.isolation = avout::Isolation::serializable,
                       .client_isolation = avout::Isolation::snapshot}) == 0);
}

TEST_CASE("snapshot mode allows write skew; ensuring both doctors rules it out") {
  // The client's option this time; the dosyncs below ask for snapshot mode one by one.
  const int skews = skewed_rounds({.client_isolation = avout::Isolation::snapshot});
  MESSAGE("snapshot mode without ensure: write skew in " << skews << " of 12 rounds (allowed)");
  CHECK(skewed_rounds({.isolation = avout::Isolation::snapshot, .ensure = true}) == 0);
  CHECK(
      skewed_rounds(
          {.x_store = 1, .y_store = 2, .isolation = avout::Isolation::snapshot, .ensure = true}) ==
      0);
}
