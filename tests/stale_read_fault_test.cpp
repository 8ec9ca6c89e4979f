// Real-time reads with stale watch events delayed (validated attempts, issue 40 item 3): one
// client commits x = i and returns; then another client's dosync, on a thread whose previous
// dosync wrote (so, in the default mode, its attempt is validated: it reads x from its watched
// cache, whose watch event for that commit may still be on the way), must see x >= i,
//   - in a read-only outcome (confirmed by a synced re-read before it stands),
//   - in an exception its body throws on what it read (confirmed the same way),
//   - in a read-write commit (the head read is checked in the commit multi).
// A FaultPlan delays 30% of the process's ZooKeeper replies and half of its watch events by
// up to 10 ms (support/zookeeper_faults.hpp `delay`, `event_delay`), widening the window in which
// the reader's cache is stale. Both isolation modes: snapshot mode reads at a synced read point.
#include <avout/avout.hpp>

#include "support/dosync_in.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <optional>
#include <stdexcept>

using namespace std::chrono_literals;
using avout::testing::dosync_in;

namespace {

// The reader's body saw a value older than one acknowledged before it began.
struct StaleRead : std::runtime_error {
  StaleRead() : std::runtime_error("read a value older than an acknowledged commit") {}
};

struct Staleness {
  int rounds = 0;
  int stale_read_only = 0;   // read-only outcomes older than the last acknowledged commit
  int stale_exceptions = 0;  // exceptions thrown on such a value
  int stale_commits = 0;     // read-write commits that read such a value
};

Staleness run_reads(std::optional<avout::Isolation> isolation) {
  avout::testing::start_shared_servers();
  const std::string name = avout::testing::unique_name("/stale-read-test", "x");
  avout::testing::ThreeStores writer;
  avout::testing::ThreeStores reader;
  auto x = writer.client.ref<long>(name, 0);
  auto seen = reader.client.ref<long>(name, 0);
  auto scratch = reader.client.ref<long>(name + "-scratch", 0);
  avout::testing::FaultPlan plan(7, {.delay = 0.3, .max_delay = 10ms, .event_delay = 0.5},
                                 avout::testing::shared_zookeeper().connect_string());
  Staleness found;
  const auto end = std::chrono::steady_clock::now() + avout::testing::scaled(4000ms);
  for (long i = 1; std::chrono::steady_clock::now() < end; ++i) {
    (void)seen.deref();  // keep the reader's cache of x (and its watch) warm
    dosync_in(reader.client, isolation, [&] { scratch.alter([](long v) { return v + 1; }); });
    dosync_in(writer.client, isolation, [&] { x.ref_set(i); });  // acknowledged: x == i
    switch (i % 3) {
      case 0:
        if (dosync_in(reader.client, isolation, [&] { return seen.deref(); }) < i)
          ++found.stale_read_only;
        break;
      case 1:
        try {
          dosync_in(reader.client, isolation, [&] {
            if (seen.deref() < i) throw StaleRead();
          });
        } catch (const StaleRead&) {
          ++found.stale_exceptions;
        }
        break;
      default: {
        const long value = dosync_in(reader.client, isolation, [&] {
          const long read = seen.deref();
          scratch.ref_set(read);
          return read;
        });
        if (value < i) ++found.stale_commits;
      }
    }
    ++found.rounds;
  }
  avout::testing::FaultPlan::enable(false);
  MESSAGE(found.rounds << " rounds, "
                       << avout::testing::describe(avout::testing::FaultPlan::counts()));
  return found;
}

void check_fresh(const Staleness& found) {
  CHECK(found.rounds > 0);
  CHECK(found.stale_read_only == 0);
  CHECK(found.stale_exceptions == 0);
  CHECK(found.stale_commits == 0);
}

}  // namespace

TEST_CASE("default mode: a dosync begun after a commit returned sees it, whatever its outcome") {
  check_fresh(run_reads(std::nullopt));
}

TEST_CASE("snapshot mode: a dosync begun after a commit returned sees it, whatever its outcome") {
  check_fresh(run_reads(avout::Isolation::snapshot));
}
