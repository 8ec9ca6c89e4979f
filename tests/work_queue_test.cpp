// WorkQueue against a real ZooKeeper, from threads and real processes: every committed item
// is consumed by exactly one committed take (per-item counter refs written in the take's
// dosync), a put in an aborted dosync never shows, a worker SIGKILLed mid-item leaves the
// item to another, a put whose reply was lost queues once, a put's deadline (Timeout with
// nothing queued, OutcomeUnknown with the item queued at most once, ignored inside dosync),
// and a take's deadline.
#include <avout/avout.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <numeric>
#include <random>
#include <stop_token>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using avout::testing::scaled;
using Clock = std::chrono::steady_clock;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/wq-test", stem);
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 2000ms};
}

std::string folder_of(avout::Client& client, const std::string& name) {
  return client.options().root + "/queues" + name;
}

// The item nodes in the queue's folder, as ZooKeeper has them.
std::size_t items_queued(avout::Client& client, const std::string& name) {
  std::size_t n = 0;
  for (const auto& child : client.session().children(folder_of(client, name)))
    n += child.starts_with("i-") ? 1 : 0;
  return n;
}

// The children of the commit markers' folder (a commit's marker is created by its multi).
std::vector<std::string> commit_markers(avout::Client& client) {
  auto names = client.session().children(avout::inspect::markers_path(client));
  std::sort(names.begin(), names.end());
  return names;
}

// Every item `queue` holds now, taken one by one, in queue order.
std::vector<int> drain(avout::WorkQueue<int>& queue) {
  std::vector<int> items;
  while (auto item = queue.try_take()) items.push_back(*item);
  return items;
}

// The counter ref of item `item` of the queue `name`.
std::string counter(const std::string& name, int item) {
  return name + "/count-" + std::to_string(item);
}

std::filesystem::path marker(const std::string& stem) {
  return std::filesystem::temp_directory_path() /
         ("avout-wq-" + stem + "-" + std::to_string(::getpid()));
}

}  // namespace

TEST_CASE("300 items from 2 producer processes are consumed once by 3x3 workers") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("many");
  constexpr int per_producer = 150;
  const auto producers_done = marker("produced");
  std::filesystem::remove(producers_done);
  {  // the counters exist before anyone forks
    avout::Client client(options());
    for (int i = 0; i < 2 * per_producer; ++i) (void)client.ref<long>(counter(name, i), 0);
  }
  avout::testing::StartSignal go;
  std::vector<avout::testing::ChildProcess> children;
  for (int p = 0; p < 2; ++p) {
    children.emplace_back(p, [&](int index) {
      go.wait();
      avout::Client client(options());
      auto queue = client.work_queue<int>(name);
      auto puts = client.ref<long>(name + "/puts-" + std::to_string(index), 0);
      for (int k = 0; k < per_producer; ++k) {
        const int item = index * per_producer + k;
        if (k % 3 == 0) {
          client.dosync([&] {
            queue.put(item);
            puts.alter([](long n) { return n + 1; });
          });
        } else if (k % 3 == 1) {
          queue.put(item);
        } else {
          try {  // aborted: neither its item nor its write may show
            client.dosync([&] {
              queue.put(10000 + item);
              puts.alter([](long n) { return n + 1; });
              throw std::runtime_error("abort");
            });
          } catch (const std::runtime_error&) {
          }
          client.dosync([&] { queue.put(item); });
        }
      }
    });
  }
  for (int w = 0; w < 3; ++w) {
    children.emplace_back(2 + w, [&](int) {
      go.wait();
      avout::Client client(options());
      auto queue = client.work_queue<int>(name);
      std::vector<std::thread> threads;
      std::atomic<bool> bad{false};
      for (int t = 0; t < 3; ++t) {
        threads.emplace_back([&] {
          while (true) {
            const auto item = client.dosync([&] {
              auto got = queue.take(avout::Deadline::after(scaled(1s)));
              if (got && *got >= 0 && *got < 2 * per_producer)
                client.ref<long>(counter(name, *got), 0).alter([](long n) { return n + 1; });
              return got;
            });
            if (item && (*item < 0 || *item >= 2 * per_producer)) bad = true;
            // A take may give up at its deadline under load: only an empty queue ends it.
            if (!item && std::filesystem::exists(producers_done) && queue.size() == 0) return;
          }
        });
      }
      for (auto& t : threads) t.join();
      if (bad) throw std::runtime_error("an aborted put's item was taken");
    });
  }
  go.release();
  CHECK(children[0].wait(scaled(120s)) == 0);
  CHECK(children[1].wait(scaled(120s)) == 0);
  std::ofstream(producers_done).put('x');
  for (int w = 0; w < 3; ++w) CHECK(children[2 + w].wait(scaled(120s)) == 0);
  std::filesystem::remove(producers_done);

  // The checker: each committed item taken by exactly one committed take; no aborted put.
  avout::Client client(options());
  int once = 0;
  for (int i = 0; i < 2 * per_producer; ++i) {
    const long n = client.ref<long>(counter(name, i), 0).deref();
    if (n != 1) MESSAGE("item " << i << " consumed " << n << " times");
    once += n == 1 ? 1 : 0;
  }
  CHECK(once == 2 * per_producer);
  CHECK(client.ref<long>(name + "/puts-0", 0).deref() == per_producer / 3);
  CHECK(client.ref<long>(name + "/puts-1", 0).deref() == per_producer / 3);
  CHECK(items_queued(client, name) == 0);
}

TEST_CASE("a worker SIGKILLed inside its dosync leaves its item to another") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("killed");
  const auto taken = marker("taken");
  std::filesystem::remove(taken);
  avout::testing::StartSignal go;
  avout::testing::ChildProcess worker(0, [&](int) {
    go.wait();
    avout::Client client(options());
    auto queue = client.work_queue<std::string>(name);
    client.dosync([&] {
      (void)queue.take(avout::Deadline::after(scaled(20s)));
      std::ofstream(taken).put('x');
      std::this_thread::sleep_for(60s);  // killed here, before the commit
    });
  });
  avout::Client client(options());
  auto queue = client.work_queue<std::string>(name);
  queue.put("job");
  go.release();
  REQUIRE(avout::testing::wait_for_file(taken, scaled(20s)));
  worker.signal(SIGKILL);
  (void)worker.wait(scaled(10s));
  std::filesystem::remove(taken);
  CHECK(queue.size() == 1);
  CHECK(queue.take_for(scaled(10s)) == std::optional<std::string>("job"));
  CHECK(queue.size() == 0);
}

TEST_CASE("a put whose reply was lost queues its item once") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("lost-reply");
  avout::Client client(options());
  auto queue = client.work_queue<int>(name);
  const auto folder = folder_of(client, name);
  // Outside dosync too the create goes out in a commit multi with its marker.
  avout::testing::fail_next(avout::testing::ZooKeeperCall::multi, folder, 1, true);
  queue.put(1);
  CHECK(avout::testing::failures_to_come() == 0);
  CHECK(items_queued(client, name) == 1);
  avout::testing::fail_next(avout::testing::ZooKeeperCall::multi, folder, 1, true);
  try {
    client.dosync([&] { queue.put(2); });
  } catch (const avout::OutcomeUnknown&) {  // allowed: then it landed once or not at all
  }
  CHECK(avout::testing::failures_to_come() == 0);
  const auto after = items_queued(client, name);
  CHECK((after == 1 || after == 2));
  CHECK(queue.try_take() == std::optional<int>(1));
  if (after == 2) {
    CHECK(queue.try_take() == std::optional<int>(2));
  }
  CHECK(queue.try_take() == std::nullopt);
}

// A put whose reply was lost must not take the item's absence for "never queued": a waiting
// taker (another session) may consume it before the put looks. Each round loses the reply of
// the put's request (a create or a multi, whichever the put sends) while the taker waits.
TEST_CASE("a put whose reply was lost queues once though a taker consumed the item first") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("lost-then-taken");
  avout::Client producer(options());
  avout::Client worker(options());
  auto puts = producer.work_queue<int>(name);
  auto takes = worker.work_queue<int>(name);
  const auto folder = folder_of(producer, name);
  constexpr int rounds = 8;
  std::mutex mutex;
  std::vector<int> taken;
  std::atomic<bool> stop{false};
  std::thread taker([&] {
    while (!stop) {
      if (auto item = takes.take_for(500ms)) {
        std::lock_guard lock(mutex);
        taken.push_back(*item);
      }
    }
  });
  const auto count_taken = [&] {
    std::lock_guard lock(mutex);
    return taken.size();
  };
  for (int round = 0; round < rounds; ++round) {
    // The taker waits in line, so the item goes as soon as it is there.
    const auto waiting_by = Clock::now() + scaled(10s);
    while (producer.session().children(folder + "/waiters").empty() && Clock::now() < waiting_by)
      std::this_thread::sleep_for(5ms);
    avout::testing::fail_next(avout::testing::ZooKeeperCall::create, folder + "/i-", 1, true);
    avout::testing::fail_next(avout::testing::ZooKeeperCall::multi, folder + "/i-", 1, true);
    try {
      puts.put(round);
    } catch (const avout::OutcomeUnknown&) {  // allowed: then it landed once or not at all
    }
    avout::testing::cancel_failures();
    const auto taken_by = Clock::now() + scaled(10s);
    while (count_taken() < static_cast<std::size_t>(round + 1) && Clock::now() < taken_by)
      std::this_thread::sleep_for(5ms);
  }
  // A second node of an item would be taken within the taker's next look.
  std::this_thread::sleep_for(scaled(1s));
  stop = true;
  taker.join();
  std::vector<int> expected(rounds);
  std::iota(expected.begin(), expected.end(), 0);
  std::sort(taken.begin(), taken.end());
  std::string seen;
  for (const int item : taken) seen += " " + std::to_string(item);
  INFO("items taken:" << seen);
  CHECK(taken == expected);
  CHECK(items_queued(producer, name) == 0);
}

TEST_CASE("a put outside dosync whose deadline already passed is Timeout and queues nothing") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("put-expired");
  avout::Client client(options());
  auto queue = client.work_queue<int>(name);
  queue.put(1);
  const auto markers_before = commit_markers(client);
  CHECK_THROWS_AS(queue.put(2, avout::Deadline::after(-1ms)), avout::Timeout);
  std::stop_source stopped;
  stopped.request_stop();
  CHECK_THROWS_AS(queue.put(3, avout::Deadline(stopped.get_token())), avout::Timeout);
  CHECK(items_queued(client, name) == 1);
  // Nothing was sent: no commit multi, so no marker of one.
  const auto markers_after = commit_markers(client);
  std::vector<std::string> added;
  std::set_difference(markers_after.begin(), markers_after.end(), markers_before.begin(),
                      markers_before.end(), std::back_inserter(added));
  CHECK(added.empty());
  CHECK(drain(queue) == std::vector<int>{1});
  queue.put(4, avout::Deadline::after(scaled(10s)));
  CHECK(drain(queue) == std::vector<int>{4});
}

// The put's commit multi lands with its reply lost, and every look at its marker fails until
// the put's deadline of a few hundred ms has passed: whether the item is queued cannot be
// told, so the put says OutcomeUnknown (never Timeout, which promises nothing queued).
TEST_CASE("a put whose commit outcome is still unknown at its deadline is OutcomeUnknown, at most once") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("put-unknown");
  avout::Client client(options());
  auto queue = client.work_queue<int>(name);
  const auto folder = folder_of(client, name);
  constexpr int silent_looks = 100000;  // more than the deadline leaves time for
  std::string thrown;
  // Under load the put may not reach its commit before a short deadline: that is a Timeout
  // with the multi's fault still to come (nothing sent, nothing queued); try a longer one.
  for (auto deadline = scaled(300ms); thrown.empty() || thrown == "Timeout"; deadline *= 2) {
    REQUIRE(deadline <= 20s);
    avout::testing::cancel_failures();
    avout::testing::fail_next(avout::testing::ZooKeeperCall::multi, folder, 1, true);
    avout::testing::fail_next(avout::testing::ZooKeeperCall::sync,
                              avout::inspect::markers_path(client), silent_looks);
    try {
      queue.put(1, avout::Deadline::after(deadline));
      thrown = "nothing";
    } catch (const avout::OutcomeUnknown&) {
      thrown = "OutcomeUnknown";
    } catch (const avout::Timeout&) {
      thrown = "Timeout";
      // Timeout promises nothing was queued: the multi never went out.
      REQUIRE(avout::testing::failures_to_come() == silent_looks + 1);
      CHECK(items_queued(client, name) == 0);
    }
  }
  const int left = avout::testing::failures_to_come();
  INFO("faults still to come: " << left << " (the multi's and " << silent_looks << " syncs')");
  avout::testing::cancel_failures();
  CHECK(thrown == "OutcomeUnknown");
  // It landed (only its reply was lost), and once: no second create went out for it.
  CHECK(drain(queue) == std::vector<int>{1});
  // The client goes on: the next put queues its item.
  queue.put(2, avout::Deadline::after(scaled(10s)));
  CHECK(drain(queue) == std::vector<int>{2});
}

TEST_CASE("inside dosync a put ignores its own deadline: queued iff the dosync commits") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("put-in-dosync");
  avout::Client client(options());
  auto queue = client.work_queue<int>(name);
  auto puts = client.ref<long>(name + "/puts", 0);
  const auto expired = avout::Deadline::after(-1ms);
  client.dosync([&] {
    queue.put(1, expired);
    puts.alter([](long n) { return n + 1; });
  });
  CHECK(puts.deref() == 1);
  CHECK(items_queued(client, name) == 1);
  CHECK_THROWS_AS(client.dosync([&] {
    queue.put(2, expired);
    puts.alter([](long n) { return n + 1; });
    throw std::runtime_error("abort");
  }),
                  std::runtime_error);
  CHECK(puts.deref() == 1);
  CHECK(drain(queue) == std::vector<int>{1});
}

TEST_CASE("a take waits for a put, and gives up at its deadline") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("deadline");
  avout::Client client(options());
  auto queue = client.work_queue<int>(name);
  CHECK(queue.try_take() == std::nullopt);
  const auto start = Clock::now();
  CHECK(queue.take_for(300ms) == std::nullopt);
  CHECK(Clock::now() - start >= 300ms);
  // An untimed take inside a dosync with a deadline ends with the dosync's.
  CHECK_THROWS_AS(client.dosync(avout::Deadline::after(300ms), [&] { return queue.take(); }),
                  avout::Timeout);
  // Waiters in line: each put wakes the first, which passes the turn on.
  std::vector<std::thread> takers;
  std::atomic<int> sum{0};
  for (int t = 0; t < 4; ++t) {
    takers.emplace_back([&] {
      if (auto item = queue.take_for(scaled(20s))) sum += *item;
    });
  }
  std::this_thread::sleep_for(200ms);
  for (int i = 1; i <= 4; ++i) queue.put(i);
  for (auto& t : takers) t.join();
  CHECK(sum == 10);
  CHECK(client.session().children(folder_of(client, name) + "/waiters").empty());
  CHECK(client.session().children(folder_of(client, name) + "/waiters").empty());
}

TEST_CASE("two takes in one dosync get two items, both taken iff it commits") {
  (void)avout::testing::shared_zookeeper();
  avout::Client client(options());
  auto queue = client.work_queue<int>(unique_name("two"));
  queue.put(1);
  queue.put(2);
  CHECK_THROWS_AS(client.dosync([&] {
    CHECK(queue.try_take() == std::optional<int>(1));
    CHECK(queue.try_take() == std::optional<int>(2));
    CHECK(queue.try_take() == std::nullopt);
    throw std::runtime_error("abort");
  }),
                  std::runtime_error);
  CHECK(queue.size() == 2);
  const auto both = client.dosync([&] {
    const int first = *queue.try_take();
    return first + 10 * *queue.try_take();
  });
  CHECK(both == 21);
  CHECK(queue.size() == 0);
}

TEST_CASE("an item too large for a node is refused") {
  (void)avout::testing::shared_zookeeper();
  avout::Client client(options());
  auto queue = client.work_queue<std::string>(unique_name("large"));
  CHECK_THROWS_AS(queue.put(std::string(1024 * 1024, 'x')), avout::ValueTooLarge);
  CHECK(queue.size() == 0);
}
