// Locks across the wrap of ZooKeeper's sequential counter: a folder's suffixes are its signed
// 32-bit child counter, which goes from 2147483647 to -2147483648 after 2^31 changes of its
// children. The injector (support/zookeeper_faults.hpp, CounterOffset) shows the counters
// near that point, so the wrap comes after a few locks instead of 25 days of them.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/sequence-wrap", stem);
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 4000ms};
}

std::vector<std::string> writers(avout::Client& client, const std::string& name) {
  return client.session().children(avout::inspect::lock_path(client, name) + "/writers");
}

void wait_for_writers(avout::Client& client, const std::string& name, std::size_t count) {
  const auto deadline = std::chrono::steady_clock::now() + scaled(20s);
  while (writers(client, name).size() < count && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(writers(client, name).size() == count);
}

}  // namespace

TEST_CASE("a waiter queued before the sequence counter wraps goes before one queued after it") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("order");
  // The fresh writers folder counts 0, 1, 2: shown as 2147483646, 2147483647, -2147483648.
  avout::testing::CounterOffset wrap(name, (std::int64_t{1} << 31) - 2);
  avout::Client holder_client(options()), early_client(options()), late_client(options());
  auto holder = holder_client.lock(name);
  holder.lock();
  std::mutex order_mutex;
  std::vector<std::string> order;
  auto take = [&](avout::Client& client, std::string who) {
    return std::async(std::launch::async, [&client, &name, &order_mutex, &order, who] {
      auto lock = client.lock(name);
      const bool got = lock.try_lock_for(scaled(20s));
      if (got) {
        std::lock_guard guard(order_mutex);
        order.push_back(who);
      }
      if (got) lock.unlock();
      return got;
    });
  };
  auto early = take(early_client, "early");
  wait_for_writers(holder_client, name, 2);
  auto late = take(late_client, "late");
  wait_for_writers(holder_client, name, 3);
  bool wrapped = false;
  for (const auto& node : writers(holder_client, name)) wrapped |= node.ends_with("-2147483648");
  CHECK(wrapped);  // the injector did show the wrap
  holder.unlock();
  CHECK(early.get());
  CHECK(late.get());
  CHECK(order == std::vector<std::string>{"early", "late"});
  CHECK(writers(holder_client, name).empty());
}

TEST_CASE(
    "threads of several clients locking across the sequence counter's wrap exclude each other") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("exclusion");
  // Each lock and unlock moves the counter by two: the wrap comes within the first few rounds.
  avout::testing::CounterOffset wrap(name, (std::int64_t{1} << 31) - 5);
  constexpr int threads = 4, rounds = 12;
  std::atomic<int> inside{0}, most_inside{0}, entries{0}, negative_seen{0};
  std::vector<std::future<void>> workers;
  for (int t = 0; t < threads; ++t) {
    workers.push_back(std::async(std::launch::async, [&] {
      avout::Client client(options());
      auto lock = client.lock(name);
      for (int i = 0; i < rounds; ++i) {
        lock.lock();
        const int now = ++inside;
        int most = most_inside.load();
        while (now > most && !most_inside.compare_exchange_weak(most, now)) {
        }
        for (const auto& node : writers(client, name)) {
          if (node.find("--") != std::string::npos) ++negative_seen;  // "<kind>-<id>-" then "-…"
        }
        std::this_thread::sleep_for(2ms);
        --inside;
        ++entries;
        lock.unlock();
      }
    }));
  }
  for (auto& worker : workers) worker.get();
  CHECK(entries == threads * rounds);
  CHECK(most_inside == 1);
  CHECK(negative_seen > 0);
  avout::Client client(options());
  CHECK(writers(client, name).empty());
}
