// ClientOptions::metrics against a real ZooKeeper: a contended run of dosyncs, atom swaps,
// lock acquisitions and agent sends is counted exactly where the protocol makes it exact
// (commits, attempts = commits + retries, retries by cause, one lock wait per acquisition),
// session events are counted, and a client without a sink records nothing.
#include <avout/avout.hpp>

#include "support/prometheus_text.hpp"
#include "support/servers.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using avout::testing::parse_prometheus;
using avout::testing::PrometheusText;
using avout::testing::scaled;

namespace {

avout::ClientOptions with_sink(std::shared_ptr<avout::MetricsSink> sink) {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 6000ms,
                              .metrics = std::move(sink)};
}

// Fresh names for each test case.
std::string fresh(const std::string& what) {
  return "/metrics-test/" + what + "-" + std::to_string(std::random_device{}());
}

// The rendering of `sink` once `ready` holds for it, or the last one after `limit`.
PrometheusText rendered_when(const avout::PrometheusMetrics& sink,
                             const std::function<bool(const PrometheusText&)>& ready,
                             std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + scaled(limit);
  while (true) {
    auto parsed = parse_prometheus(sink.render());
    if (ready(parsed) || std::chrono::steady_clock::now() > until) return parsed;
    std::this_thread::sleep_for(20ms);
  }
}

}  // namespace

TEST_CASE("a contended run's commits, attempts, retries and lock waits are counted exactly") {
  auto sink = std::make_shared<avout::PrometheusMetrics>();
  avout::Client first(with_sink(sink));
  avout::Client second(with_sink(sink));  // two clients may share one sink
  const std::string a = fresh("a"), b = fresh("b"), counter = fresh("atom"), mutex = fresh("mutex"),
                    rw = fresh("rw"), agent = fresh("agent"), permits = fresh("semaphore");
  constexpr int threads_per_client = 2, dosyncs_per_thread = 10, swaps = 20;
  constexpr int locks_per_thread = 4, sends = 20;

  std::atomic<int> returned{0};
  std::vector<std::thread> threads;
  for (avout::Client* client : {&first, &second}) {
    for (int t = 0; t < threads_per_client; ++t) {
      threads.emplace_back([&, client] {
        auto x = client->ref<long>(a, 0);
        auto y = client->ref<long>(b, 0);
        for (int i = 0; i < dosyncs_per_thread; ++i) {
          client->dosync([&] {
            x.alter([](long v) { return v + 1; });
            y.commute([](long v) { return v + 1; });
          });
          ++returned;
        }
      });
      // Lock waits: each thread holds the mutex a little, so the others wait; a nested
      // (reentrant) lock is no acquisition and is not measured.
      threads.emplace_back([&, client] {
        auto lock = client->lock(mutex);
        for (int i = 0; i < locks_per_thread; ++i) {
          lock.lock();
          lock.lock();
          std::this_thread::sleep_for(5ms);
          lock.unlock();
          lock.unlock();
        }
      });
      // Permits of a one-permit semaphore: one wait each, like a lock's.
      threads.emplace_back([&, client] {
        auto semaphore = client->semaphore(permits, 1);
        for (int i = 0; i < locks_per_thread; ++i) {
          auto permit = semaphore.acquire();
          std::this_thread::sleep_for(5ms);
        }
      });
    }
  }
  // Atom swaps are no transactions: they change none of the transaction counts.
  threads.emplace_back([&] {
    auto atom = first.atom<long>(counter, 0);
    for (int i = 0; i < swaps; ++i) atom.swap([](long v) { return v + 1; });
  });
  auto log = second.agent<long>(agent, 0);
  for (int i = 0; i < sends; ++i) log.send([](long v) { return v + 1; });
  {
    auto lock = first.read_write_lock(rw);
    lock.lock_shared();
    lock.unlock_shared();
    lock.lock();
    lock.unlock();
  }
  for (auto& thread : threads) thread.join();
  REQUIRE(log.await_for(scaled(30s)));
  CHECK(first.ref<long>(a, 0).deref() == 2 * threads_per_client * dosyncs_per_thread);
  CHECK(log.deref() == sends);

  const auto parsed = rendered_when(
      *sink, [](const PrometheusText& p) { return p.sum("avout_agent_queue_length") == 0; }, 10s);
  const double commits = *parsed.value("avout_commits_total");
  const double attempts = *parsed.value("avout_transaction_attempts_total");
  const double retries = parsed.sum("avout_transaction_retries_total");
  CHECK(commits == returned.load());
  CHECK(commits == 2 * threads_per_client * dosyncs_per_thread);
  CHECK(attempts == commits + retries);
  CHECK(parsed.value("avout_commit_duration_seconds_count") == commits);
  CHECK(parsed.value("avout_commit_duration_seconds_bucket", {{"le", "+Inf"}}) == commits);
  CHECK(*parsed.value("avout_commit_duration_seconds_sum") > 0);
  // Every retry has a cause of the documented set.
  for (const auto& sample : parsed.samples) {
    if (sample.name != "avout_transaction_retries_total") continue;
    const std::string cause = sample.labels.at("cause");
    CHECK((cause == "conflict" || cause == "commute_conflict" || cause == "history_miss" ||
           cause == "barging_yield" || cause == "confirmation" || cause == "view_changed" ||
           cause == "session_renewed" ||
           cause == "session_expired"));
  }
  CHECK(parsed.value("avout_barging_yields_total").value_or(0) ==
        parsed.value("avout_transaction_retries_total", {{"cause", "barging_yield"}}).value_or(0));
  // One wait per acquisition: reentries are not measured, and nothing timed out.
  CHECK(parsed.value("avout_lock_wait_seconds_count", {{"kind", "mutex"}}) ==
        2 * threads_per_client * locks_per_thread);
  CHECK(parsed.value("avout_lock_wait_seconds_count", {{"kind", "semaphore"}}) ==
        2 * threads_per_client * locks_per_thread);
  CHECK(parsed.value("avout_lock_wait_seconds_count", {{"kind", "read"}}) == 1);
  CHECK(parsed.value("avout_lock_wait_seconds_count", {{"kind", "write"}}) == 1);
  CHECK(!parsed.value("avout_lock_timeouts_total", {{"kind", "mutex"}}));
  // Each action ran at least once (a batch whose commit loses a race runs again).
  CHECK(*parsed.value("avout_agent_action_duration_seconds_count") >= sends);
  CHECK(parsed.value("avout_agent_queue_length", {{"agent", agent}}) == 0);
}

TEST_CASE("a lock or permit acquisition that gives up at its deadline counts a timeout") {
  auto sink = std::make_shared<avout::PrometheusMetrics>();
  avout::Client holder(with_sink(sink));
  avout::Client waiter(with_sink(sink));
  const std::string name = fresh("held");
  auto held = holder.lock(name);
  held.lock();
  auto wanted = waiter.lock(name);
  CHECK(!wanted.try_lock_for(100ms));
  held.unlock();
  const auto parsed = parse_prometheus(sink->render());
  CHECK(parsed.value("avout_lock_wait_seconds_count", {{"kind", "mutex"}}) == 1);
  CHECK(parsed.value("avout_lock_timeouts_total", {{"kind", "mutex"}}) == 1);

  const std::string permits = fresh("permits");
  auto semaphore = holder.semaphore(permits, 1);
  auto permit = semaphore.acquire();
  CHECK(!waiter.semaphore(permits, 1).try_acquire_for(100ms));
  const auto after = parse_prometheus(sink->render());
  CHECK(after.value("avout_lock_wait_seconds_count", {{"kind", "semaphore"}}) == 1);
  CHECK(after.value("avout_lock_timeouts_total", {{"kind", "semaphore"}}) == 1);
}

TEST_CASE("a session expiry is counted as expired, then renewed") {
  auto sink = std::make_shared<avout::PrometheusMetrics>();
  avout::Client client(with_sink(sink));
  const auto before = parse_prometheus(sink->render());
  CHECK(before.sum("avout_session_events_total") == 0);  // the first connect is not an event
  client.session().expire_for_testing();
  const auto parsed = rendered_when(
      *sink,
      [](const PrometheusText& p) {
        return p.value("avout_session_events_total", {{"event", "renewed"}}).has_value();
      },
      30s);
  CHECK(parsed.value("avout_session_events_total", {{"event", "expired"}}) == 1);
  CHECK(parsed.value("avout_session_events_total", {{"event", "renewed"}}) == 1);
  // The renewed session works, and its dosyncs are counted.
  auto ref = client.ref<long>(fresh("after-expiry"), 0);
  client.dosync([&] { ref.alter([](long v) { return v + 1; }); });
  CHECK(parse_prometheus(sink->render()).value("avout_commits_total") == 1);
}

TEST_CASE("a client without a sink records nothing") {
  auto sink = std::make_shared<avout::PrometheusMetrics>();
  avout::Client observed(with_sink(sink));  // shares the servers, not the sink
  avout::Client quiet(with_sink(nullptr));
  CHECK(quiet.options().metrics == nullptr);
  auto ref = quiet.ref<long>(fresh("quiet"), 0);
  for (int i = 0; i < 3; ++i) quiet.dosync([&] { ref.alter([](long v) { return v + 1; }); });
  auto lock = quiet.lock(fresh("quiet-lock"));
  lock.lock();
  lock.unlock();
  auto agent = quiet.agent<long>(fresh("quiet-agent"), 0);
  agent.send([](long v) { return v + 1; });
  REQUIRE(agent.await_for(scaled(30s)));
  CHECK(ref.deref() == 3);
  const auto parsed = parse_prometheus(sink->render());
  CHECK(parsed.value("avout_commits_total") == 0);
  CHECK(parsed.value("avout_transaction_attempts_total") == 0);
  CHECK(parsed.value("avout_agent_action_duration_seconds_count") == 0);
  CHECK(!parsed.value("avout_lock_wait_seconds_count", {{"kind", "mutex"}}));
}
