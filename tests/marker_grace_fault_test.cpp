// A commit's marker answers a lost commit reply only while gc leaves it alone (rule 6): an
// owner cut off from ZooKeeper longer than ClientOptions::marker_grace, while another process
// runs gc, finds no marker for a commit that landed. It must not judge "not landed" then
// (erasing the values the head names, or running the body again). The grace is scaled down
// through the option so the partition lasts seconds; scripts/soak runs the full-length one.
#include <avout/avout.hpp>
#include <avout/store_registry.hpp>

#include "runtime/marked_commit.hpp"  // white-box: resolve_commit

#include "support/servers.hpp"
#include "support/tcp_relay.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;
using avout::testing::TcpRelay;

namespace {

constexpr auto grace = 2000ms;

avout::ClientOptions options(const std::string& root) {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 6000ms,
                              .root = root,
                              .marker_grace = grace};
}

// The marker below `root` that is not among `before`, once one appears.
std::string new_marker(avout::Client& client, const std::string& root,
                       const std::vector<std::string>& before) {
  const std::string folder = root + "/stm/markers";
  const auto deadline = std::chrono::steady_clock::now() + scaled(20s);
  while (std::chrono::steady_clock::now() < deadline) {
    for (const auto& child : client.session().children(folder)) {
      if (std::find(before.begin(), before.end(), child) == before.end())
        return folder + "/" + child;
    }
    std::this_thread::sleep_for(20ms);
  }
  FAIL("the commit multi never landed");
  return {};
}

// Holds `owner`'s connection once `body`'s dosync is about to send its commit multi, lets
// the multi land with its reply lost, keeps the owner away from ZooKeeper while `meanwhile`
// runs (the marker's path given), then lets it reconnect and resolve.
void partition_commit(TcpRelay& relay, avout::Client& observer, const std::string& root,
                      const std::function<void(const std::function<void()>&)>& commit,
                      const std::function<void(const std::string&)>& meanwhile) {
  const auto before = observer.session().children(root + "/stm/markers");
  std::exception_ptr failure;
  std::thread committing([&] {
    try {
      commit([&] { relay.hold(); });
    } catch (const std::exception& error) {
      MESSAGE("the commit threw: " << std::string(error.what()));
      failure = std::current_exception();
    }
  });
  if (!relay.keeps(root + "/stm/markers/", scaled(20s))) {  // the commit multi, held
    relay.release();
    committing.join();
    if (failure) std::rethrow_exception(failure);
    FAIL("the commit multi was not sent");
  }
  relay.lose_replies();
  relay.set(TcpRelay::Mode::refuse);
  relay.release();
  const std::string marker = new_marker(observer, root, before);
  meanwhile(marker);
  relay.set(TcpRelay::Mode::pass);
  committing.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace

TEST_CASE(
    "a commit whose owner is cut off past the marker grace while gc runs elsewhere is applied once "
    "and its refs stay readable") {
  avout::testing::start_shared_servers();
  avout::register_builtin_stores();
  const std::string root = avout::testing::unique_name("/marker-grace-test", "root");
  TcpRelay relay(avout::testing::shared_zookeeper().port());
  auto relayed = options(root);
  relayed.hosts = relay.connect_string();
  avout::Client owner(relayed);
  avout::Client sweeper(options(root));
  auto owner_redis = avout::make_store(owner, avout::testing::shared_redis().url());
  auto sweeper_redis = avout::make_store(sweeper, avout::testing::shared_redis().url());
  // In Redis, so that nothing but the commit multi goes to ZooKeeper after the body.
  auto stored = owner.ref<long>("/stored", 0, *owner_redis);

  int runs = 0;
  CHECK_NOTHROW(partition_commit(
      relay, sweeper, root,
      [&](const std::function<void()>& hold) {
        owner.dosync([&] {
          ++runs;
          stored.alter([](long v) { return v + 1; });
          if (runs == 1) hold();
        });
      },
      [&](const std::string& marker) {
        std::this_thread::sleep_for(grace);
        const auto report = sweeper.gc({*sweeper_redis}, 1ms);
        CHECK(report.markers_removed >= 1);
        CHECK_FALSE(sweeper.session().exists(marker));
      }));
  CHECK(runs == 1);
  auto stored_there = sweeper.ref<long>("/stored", 0, *sweeper_redis);
  CHECK_NOTHROW(CHECK(stored_there.deref() == 1));
  CHECK_NOTHROW(CHECK(stored.deref() == 1));
}

TEST_CASE(
    "an agent batch whose worker is cut off past the marker grace while gc runs elsewhere runs "
    "once and the agent keeps working") {
  avout::testing::start_shared_servers();
  avout::register_builtin_stores();
  const std::string root = avout::testing::unique_name("/marker-grace-test", "root");
  TcpRelay relay(avout::testing::shared_zookeeper().port());
  auto relayed = options(root);
  relayed.hosts = relay.connect_string();
  avout::Client owner(relayed);
  avout::Client sweeper(options(root));
  auto owner_redis = avout::make_store(owner, avout::testing::shared_redis().url());
  auto sweeper_redis = avout::make_store(sweeper, avout::testing::shared_redis().url());
  // In Redis, so that nothing but the batch's multi goes to ZooKeeper after the action.
  auto counter = owner.agent<long>("/counter", 0, *owner_redis);

  std::atomic<int> runs{0};
  CHECK_NOTHROW(partition_commit(
      relay, sweeper, root,
      [&](const std::function<void()>& hold) {
        counter.send([&](long v) {
          if (++runs == 1) hold();
          return v + 1;
        });
        counter.await(scaled(60s));
      },
      [&](const std::string&) {
        std::this_thread::sleep_for(grace);
        CHECK(sweeper.gc({*sweeper_redis}, 1ms).markers_removed >= 1);
      }));
  CHECK(runs == 1);
  CHECK_NOTHROW(CHECK(counter.deref() == 1));
  counter.send([](long v) { return v + 1; });
  CHECK_NOTHROW(counter.await(scaled(30s)));
  CHECK_NOTHROW(CHECK(counter.deref() == 2));
  auto there = sweeper.agent<long>("/counter", 0, *sweeper_redis);
  CHECK_NOTHROW(CHECK(there.deref() == 2));
}

TEST_CASE(
    "a marker's absence means not landed only within half the grace of sending; later only a head "
    "naming the commit says anything") {
  avout::testing::start_shared_servers();
  avout::ZooKeeperSession session(avout::SessionOptions{
      .hosts = avout::testing::shared_zookeeper().connect_string(), .session_timeout = 6000ms});
  const std::string folder = avout::testing::unique_name("/marker-grace-test", "resolution");
  session.create_recursive(folder);
  const std::string present = folder + "/present";
  session.create(present, {});
  const auto now = std::chrono::steady_clock::now();
  const auto never = [] { return false; };
  const auto named = [] { return true; };
  using avout::detail::Resolution;
  using avout::detail::resolve_commit;
  CHECK(resolve_commit(session, Resolution{present, grace, never}, now - 10 * grace) == true);
  CHECK(resolve_commit(session, Resolution{folder + "/absent", grace, never}, now) == false);
  // Sent longer ago than half the grace: gc may have removed the marker.
  CHECK_FALSE(resolve_commit(session, Resolution{folder + "/absent", grace, never}, now - grace)
                  .has_value());
  CHECK_FALSE(
      resolve_commit(session, Resolution{folder + "/absent", grace}, now - grace).has_value());
  CHECK(resolve_commit(session, Resolution{folder + "/absent", grace, named}, now - grace) == true);
}

TEST_CASE(
    "a lost commit reply whose resolution outlives the caller's deadline is unknown, never "
    "Timeout") {
  // The caller's deadline passes while the resolution waits for ZooKeeper (silent here; under
  // load, a reply that comes late): the commit may have landed, so the answer is "unknown"
  // (dosync: OutcomeUnknown), not the Timeout of a wait that was cut short.
  avout::testing::start_shared_servers();
  TcpRelay relay(avout::testing::shared_zookeeper().port());
  // Long enough that the C client's own timeout (two thirds of it) cannot end the wait first.
  avout::ZooKeeperSession session(
      avout::SessionOptions{.hosts = relay.connect_string(), .session_timeout = 9000ms});
  const std::string folder = avout::testing::unique_name("/marker-grace-test", "silent");
  session.create_recursive(folder);
  relay.isolate();
  const avout::detail::ReplyDeadline bound(avout::Deadline::after(500ms));
  std::optional<bool> landed = true;
  CHECK_NOTHROW(landed = avout::detail::resolve_commit(
                    session, avout::detail::Resolution{folder + "/marker", grace},
                    std::chrono::steady_clock::now()));
  CHECK_FALSE(landed.has_value());
  relay.cut();
}
