// Barrier against a real ZooKeeper, from threads and real processes: nobody passes enter
// before all N arrived, nobody passes leave before all N left, rounds reuse the name, the
// count is the barrier's, a timed-out entrant leaves nothing, a member that dies breaks the
// round for the others (BarrierBroken, not a wait forever), and a lost create reply counts
// once.
#include <avout/avout.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using avout::testing::scaled;
using Clock = std::chrono::steady_clock;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/barrier-test", stem);
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 2000ms};
}

std::string folder_of(avout::Client& client, const std::string& name) {
  return client.options().root + "/barriers" + name;
}

// The participant nodes in the barrier's folder.
std::size_t participants_queued(avout::Client& client, const std::string& name) {
  const auto children = client.session().children(folder_of(client, name));
  return static_cast<std::size_t>(std::count_if(children.begin(), children.end(),
                                                [](const auto& c) { return c.starts_with("p-"); }));
}

// One participant's four moments: before enter, after it, before leave, after it.
struct Moments {
  std::int64_t arrive = 0, entered = 0, leaving = 0, left = 0;
};

// The checker: no enter returned before the last arrival, no leave before the last leaving.
void check_never_early(const std::vector<Moments>& all) {
  std::int64_t last_arrival = 0, first_entered = INT64_MAX, last_leaving = 0,
               first_left = INT64_MAX;
  for (const auto& m : all) {
    last_arrival = std::max(last_arrival, m.arrive);
    first_entered = std::min(first_entered, m.entered);
    last_leaving = std::max(last_leaving, m.leaving);
    first_left = std::min(first_left, m.left);
  }
  CHECK(first_entered >= last_arrival);
  CHECK(first_left >= last_leaving);
}

// Enters and leaves `barrier` after a stagger, recording the moments.
Moments take_part(avout::Barrier& barrier, int index) {
  Moments m;
  std::this_thread::sleep_for(std::chrono::milliseconds(60 * index));
  m.arrive = avout::testing::now_us();
  barrier.enter(avout::Deadline::after(scaled(20s)));
  m.entered = avout::testing::now_us();
  std::this_thread::sleep_for(std::chrono::milliseconds(60 * (3 - index % 4)));
  m.leaving = avout::testing::now_us();
  barrier.leave(avout::Deadline::after(scaled(20s)));
  m.left = avout::testing::now_us();
  return m;
}

}  // namespace

TEST_CASE("4 threads: none passes enter before all arrived, nor leave before all left; twice") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("threads");
  avout::Client client(options());
  constexpr int n = 4;
  std::vector<avout::Barrier> barriers;
  for (int i = 0; i < n; ++i) barriers.push_back(client.barrier(name, n));
  for (int round = 0; round < 2; ++round) {  // the same objects, round after round
    std::vector<std::future<Moments>> runs;
    for (int i = 0; i < n; ++i) {
      runs.push_back(std::async(std::launch::async, [&, i] { return take_part(barriers[i], i); }));
    }
    std::vector<Moments> all;
    for (auto& run : runs) all.push_back(run.get());
    check_never_early(all);
  }
  CHECK(participants_queued(client, name) == 0);
  CHECK(client.session().children(folder_of(client, name)).empty());  // no records left
}

TEST_CASE("4 processes meet at the barrier; their moments show nobody passed early") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("processes");
  const auto file =
      std::filesystem::temp_directory_path() / ("avout-barrier" + name.substr(name.rfind('-')));
  constexpr int n = 4;
  const auto codes = avout::testing::run_in_processes(
      n,
      [&](int index) {
        avout::Client client(options());
        auto barrier = client.barrier(name, n);
        const auto m = take_part(barrier, index);
        std::ofstream(file, std::ios::app)
            << m.arrive << ' ' << m.entered << ' ' << m.leaving << ' ' << m.left << '\n';
      },
      scaled(60s));
  CHECK(codes == std::vector<int>(n, 0));
  std::ifstream in(file);
  std::vector<Moments> all;
  Moments m;
  while (in >> m.arrive >> m.entered >> m.leaving >> m.left) all.push_back(m);
  std::filesystem::remove(file);
  REQUIRE(all.size() == n);
  check_never_early(all);  // CLOCK_MONOTONIC is one clock for every process of the machine
}

TEST_CASE("another participant count for the same name is a Mismatch") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("mismatch");
  avout::Client client(options());
  auto barrier = client.barrier(name, 3);
  CHECK(barrier.participants() == 3);
  CHECK_THROWS_AS(client.barrier(name, 4), avout::Mismatch);
  CHECK_NOTHROW(client.barrier(name, 3));
  CHECK_THROWS_AS(client.barrier(name, 0), avout::InvalidOption);
}

TEST_CASE("an entrant past its deadline leaves nothing behind; the next N still meet") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("deadline");
  avout::Client client(options());
  auto first = client.barrier(name, 2);
  CHECK_THROWS_AS(first.enter(avout::Deadline::after(300ms)), avout::Timeout);
  CHECK(participants_queued(client, name) == 0);
  // Had the first one stayed counted, this one would pass alone.
  auto second = client.barrier(name, 2);
  CHECK_THROWS_AS(second.enter(avout::Deadline::after(300ms)), avout::Timeout);
  CHECK(participants_queued(client, name) == 0);
  auto other =
      std::async(std::launch::async, [&] { second.enter(avout::Deadline::after(scaled(20s))); });
  first.enter(avout::Deadline::after(scaled(20s)));  // the timed-out object takes part again
  other.get();
  auto leaving =
      std::async(std::launch::async, [&] { second.leave(avout::Deadline::after(scaled(20s))); });
  first.leave(avout::Deadline::after(scaled(20s)));
  leaving.get();
  CHECK(participants_queued(client, name) == 0);
}

TEST_CASE("a member SIGKILLed after entering makes the others' leave throw BarrierBroken") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("killed");
  avout::testing::StartSignal go;
  avout::testing::ChildProcess member(0, [&](int) {
    go.wait();
    avout::Client client(options());
    auto barrier = client.barrier(name, 3);
    barrier.enter(avout::Deadline::after(scaled(20s)));
    std::this_thread::sleep_for(60s);  // killed here
  });
  avout::Client client(options());
  auto a = client.barrier(name, 3);
  auto b = client.barrier(name, 3);
  go.release();
  auto entered =
      std::async(std::launch::async, [&] { a.enter(avout::Deadline::after(scaled(20s))); });
  b.enter(avout::Deadline::after(scaled(20s)));
  entered.get();
  member.signal(SIGKILL);
  (void)member.wait(scaled(10s));
  const auto start = Clock::now();
  auto other =
      std::async(std::launch::async, [&] { a.leave(avout::Deadline::after(scaled(30s))); });
  CHECK_THROWS_AS(b.leave(avout::Deadline::after(scaled(30s))), avout::BarrierBroken);
  CHECK_THROWS_AS(other.get(), avout::BarrierBroken);
  // The session timeout (2 s) ends the dead one's session; then it is seen at once.
  CHECK(Clock::now() - start < scaled(15s));
  CHECK(participants_queued(client, name) == 0);
  CHECK(client.session().children(folder_of(client, name)).empty());
  // The name is ready for the next round.
  auto later =
      std::async(std::launch::async, [&] { a.enter(avout::Deadline::after(scaled(20s))); });
  auto c = client.barrier(name, 3);
  auto third =
      std::async(std::launch::async, [&] { c.enter(avout::Deadline::after(scaled(20s))); });
  b.enter(avout::Deadline::after(scaled(20s)));
  later.get();
  third.get();
}

TEST_CASE("a member whose session expired after entering: its leave and the others' throw") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("expired");
  avout::Client client(options());
  avout::Client doomed(options());
  auto mine = client.barrier(name, 2);
  auto theirs = doomed.barrier(name, 2);
  auto entered =
      std::async(std::launch::async, [&] { theirs.enter(avout::Deadline::after(scaled(20s))); });
  mine.enter(avout::Deadline::after(scaled(20s)));
  entered.get();
  doomed.session().expire_for_testing();  // its node goes; the client renews the session
  CHECK_THROWS_AS(mine.leave(avout::Deadline::after(scaled(20s))), avout::BarrierBroken);
  CHECK_THROWS_AS(theirs.leave(avout::Deadline::after(scaled(20s))), avout::BarrierBroken);
  CHECK(client.session().children(folder_of(client, name)).empty());
}

TEST_CASE("a session renewed while waiting in enter: the entrant arrives again, counted once") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("renewed");
  avout::Client client(options());
  avout::Client renewed(options());
  auto waiting = renewed.barrier(name, 2);
  auto entered =
      std::async(std::launch::async, [&] { waiting.enter(avout::Deadline::after(scaled(20s))); });
  while (participants_queued(client, name) < 1) std::this_thread::sleep_for(10ms);
  renewed.session().expire_for_testing();
  // Its old node went with the session, and it queues a new one on the renewed session.
  auto mine = client.barrier(name, 2);
  mine.enter(avout::Deadline::after(scaled(20s)));
  entered.get();
  CHECK(participants_queued(client, name) == 2);
  auto leaving =
      std::async(std::launch::async, [&] { waiting.leave(avout::Deadline::after(scaled(20s))); });
  mine.leave(avout::Deadline::after(scaled(20s)));
  leaving.get();
}

TEST_CASE("a create whose reply was lost counts once") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("lost-reply");
  avout::Client client(options());
  auto alone = client.barrier(name, 2);
  const auto folder = folder_of(client, name);
  // Counted twice, it would be both of the 2 and pass alone.
  avout::testing::fail_next(avout::testing::ZooKeeperCall::create, folder, 1, true);
  CHECK_THROWS_AS(alone.enter(avout::Deadline::after(800ms)), avout::Timeout);
  CHECK(avout::testing::failures_to_come() == 0);
  CHECK(participants_queued(client, name) == 0);
  auto other = client.barrier(name, 2);
  avout::testing::fail_next(avout::testing::ZooKeeperCall::create, folder, 1, true);
  auto entered =
      std::async(std::launch::async, [&] { alone.enter(avout::Deadline::after(scaled(20s))); });
  while (participants_queued(client, name) < 1) std::this_thread::sleep_for(10ms);
  other.enter(avout::Deadline::after(scaled(20s)));
  entered.get();
  CHECK(avout::testing::failures_to_come() == 0);
  CHECK(participants_queued(client, name) == 2);
  auto leaving =
      std::async(std::launch::async, [&] { alone.leave(avout::Deadline::after(scaled(20s))); });
  other.leave(avout::Deadline::after(scaled(20s)));
  leaving.get();
}

TEST_CASE("a close, the leaving records and the reopening whose replies were lost still hold") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("lost-multi");
  avout::Client client(options());
  auto a = client.barrier(name, 2);
  auto b = client.barrier(name, 2);
  const auto folder = folder_of(client, name);
  for (int round = 0; round < 2; ++round) {
    // Every multi of the round applies with its reply lost: the close, the two records of
    // leaving and the reopening; each is resolved by what a later look shows.
    avout::testing::fail_next(avout::testing::ZooKeeperCall::multi, folder, 4, true);
    auto entered =
        std::async(std::launch::async, [&] { a.enter(avout::Deadline::after(scaled(20s))); });
    b.enter(avout::Deadline::after(scaled(20s)));
    entered.get();
    auto leaving =
        std::async(std::launch::async, [&] { a.leave(avout::Deadline::after(scaled(20s))); });
    b.leave(avout::Deadline::after(scaled(20s)));
    leaving.get();
    CHECK(avout::testing::failures_to_come() == 0);  // one member at least reopens
    CHECK(client.session().children(folder).empty());
  }
}

TEST_CASE("a leave past its deadline withdraws the member: the others' leave breaks") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("leave-deadline");
  avout::Client client(options());
  auto patient = client.barrier(name, 2);
  auto hasty = client.barrier(name, 2);
  auto entered =
      std::async(std::launch::async, [&] { patient.enter(avout::Deadline::after(scaled(20s))); });
  hasty.enter(avout::Deadline::after(scaled(20s)));
  entered.get();
  // The other member has not come to leave: the deadline passes.
  CHECK_THROWS_AS(hasty.leave(avout::Deadline::after(300ms)), avout::Timeout);
  CHECK(participants_queued(client, name) == 1);  // only the patient one's node
  CHECK_THROWS_AS(patient.leave(avout::Deadline::after(scaled(20s))), avout::BarrierBroken);
  CHECK(client.session().children(folder_of(client, name)).empty());
}

TEST_CASE("rounds: a participant arriving once N are in waits for the next round") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("rounds");
  avout::Client client(options());
  auto a = client.barrier(name, 2);
  auto b = client.barrier(name, 2);
  auto late = client.barrier(name, 2);
  auto d = client.barrier(name, 2);
  auto entered =
      std::async(std::launch::async, [&] { a.enter(avout::Deadline::after(scaled(20s))); });
  b.enter(avout::Deadline::after(scaled(20s)));
  entered.get();
  // The round under way is full: the third waits, and is not counted with the first two.
  auto waiting =
      std::async(std::launch::async, [&] { late.enter(avout::Deadline::after(scaled(20s))); });
  CHECK(waiting.wait_for(300ms) == std::future_status::timeout);
  auto leaving =
      std::async(std::launch::async, [&] { a.leave(avout::Deadline::after(scaled(20s))); });
  b.leave(avout::Deadline::after(scaled(20s)));
  leaving.get();
  CHECK(waiting.wait_for(300ms) == std::future_status::timeout);  // a round needs 2
  d.enter(avout::Deadline::after(scaled(20s)));
  waiting.get();
  leaving =
      std::async(std::launch::async, [&] { late.leave(avout::Deadline::after(scaled(20s))); });
  d.leave(avout::Deadline::after(scaled(20s)));
  leaving.get();
  CHECK(client.session().children(folder_of(client, name)).empty());
}

TEST_CASE("no herd: an early entrant is not woken by each later arrival") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("herd");
  constexpr int n = 8;
  avout::Client observer(options());
  avout::Client early_client(options());
  avout::Client others(options());
  auto early = early_client.barrier(name, n);
  std::vector<avout::Barrier> later;
  for (int i = 1; i < n; ++i) later.push_back(others.barrier(name, n));
  std::vector<std::future<void>> runs;
  runs.push_back(
      std::async(std::launch::async, [&] { early.enter(avout::Deadline::after(scaled(30s))); }));
  while (participants_queued(observer, name) < 1) std::this_thread::sleep_for(5ms);
  std::this_thread::sleep_for(50ms);  // its first look and watch are done
  const auto before = early_client.session().statistics().requests;
  for (int i = 0; i + 1 < n - 1; ++i) {  // all but the last arrive, one by one
    runs.push_back(std::async(std::launch::async,
                              [&, i] { later[i].enter(avout::Deadline::after(scaled(30s))); }));
    while (participants_queued(observer, name) < static_cast<std::size_t>(i) + 2) {
      std::this_thread::sleep_for(5ms);
    }
  }
  // Six arrivals; a herd would cost the early one a look (4 requests) each. Its safety look
  // every 2 s may add one or two.
  const auto spent = early_client.session().statistics().requests - before;
  CHECK(spent <= 8);
  runs.push_back(std::async(std::launch::async,
                            [&] { later.back().enter(avout::Deadline::after(scaled(30s))); }));
  for (auto& run : runs) run.get();
  runs.clear();
  runs.push_back(
      std::async(std::launch::async, [&] { early.leave(avout::Deadline::after(scaled(30s))); }));
  for (auto& barrier : later) {
    runs.push_back(std::async(std::launch::async,
                              [&] { barrier.leave(avout::Deadline::after(scaled(30s))); }));
  }
  for (auto& run : runs) run.get();
  CHECK(observer.session().children(folder_of(observer, name)).empty());
}

// A member dropped between enter and leave whose node's deletes fail (before they are sent)
// for longer than one session timeout, while its session lives on: the node must still go,
// or the others would wait in leave for a member that never leaves instead of learning that
// the round broke.
TEST_CASE("a member dropped after entering whose deletes fail still breaks the round") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("drop-fails");
  auto short_session = options();
  short_session.session_timeout = 1000ms;  // the shortest the test server grants
  avout::Client client(short_session);
  avout::Client other(options());
  std::optional<avout::Barrier> dropped = client.barrier(name, 2);
  auto stays = other.barrier(name, 2);
  auto entering =
      std::async(std::launch::async, [&] { stays.enter(avout::Deadline::after(scaled(20s))); });
  dropped->enter(avout::Deadline::after(scaled(20s)));
  entering.get();
  // More than a session timeout's worth of retries.
  avout::testing::fail_next(avout::testing::ZooKeeperCall::remove, folder_of(client, name), 12);
  dropped.reset();
  CHECK_THROWS_AS(stays.leave(avout::Deadline::after(scaled(30s))), avout::BarrierBroken);
  CHECK(avout::testing::failures_to_come() == 0);
}
