// Threads a process runs for its locks: session-wide work (the lapse after a disconnect, the
// stall check) is done once per client, so holding many locks adds no thread per lock.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/lock-threads", stem);
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 4000ms};
}

// The threads of this process now (one entry per thread under /proc/self/task).
std::ptrdiff_t thread_count() {
  const std::filesystem::directory_iterator tasks("/proc/self/task");
  return std::distance(begin(tasks), end(tasks));
}

}  // namespace

TEST_CASE("a process holding 200 locks runs fewer than 20 more threads than before") {
  avout::Client client(options());
  const auto before = thread_count();
  constexpr int plain_locks = 195;
  constexpr int read_write_locks = 5;
  std::vector<avout::Lock> locks;
  std::vector<avout::ReadWriteLock> read_write;
  for (int i = 0; i < plain_locks; ++i) {
    locks.push_back(client.lock(unique_name("plain-" + std::to_string(i))));
    locks.back().lock();
  }
  for (int i = 0; i < read_write_locks; ++i) {
    read_write.push_back(client.read_write_lock(unique_name("rw-" + std::to_string(i))));
    if (i % 2 == 0)
      read_write.back().lock();
    else
      read_write.back().lock_shared();
  }
  const auto holding = thread_count();
  int held = 0;
  for (const auto& lock : locks) held += lock.is_held() ? 1 : 0;
  for (int i = 0; i < read_write_locks; ++i) {
    auto& side = i % 2 == 0 ? read_write[i].write_lock() : read_write[i].read_lock();
    held += side.is_held() ? 1 : 0;
  }
  CHECK(held == plain_locks + read_write_locks);
  MESSAGE("threads before: " << before << ", while holding 200 locks: " << holding);
  CHECK(holding - before < 20);
  for (auto& lock : locks) lock.unlock();
  for (int i = 0; i < read_write_locks; ++i) {
    if (i % 2 == 0)
      read_write[i].unlock();
    else
      read_write[i].unlock_shared();
  }
  for (const auto& lock : locks) CHECK_FALSE(lock.is_held());
}

TEST_CASE("the client's one liveness monitor tells every held lock of an expiry") {
  avout::Client client(options());
  constexpr int count = 50;
  std::vector<avout::Lock> locks;
  std::atomic<int> lost{0};
  for (int i = 0; i < count; ++i) {
    locks.push_back(client.lock(unique_name("expiry-" + std::to_string(i))));
    locks.back().on_lost([&lost] { ++lost; });
    locks.back().lock();
  }
  client.session().expire_for_testing();
  const auto deadline = std::chrono::steady_clock::now() + avout::testing::scaled(30s);
  while (lost < count && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK(lost == count);
  for (const auto& lock : locks) CHECK_FALSE(lock.is_held());
  for (auto& lock : locks) lock.unlock();  // a lost hold is dropped quietly
  // The locks are free again: this client takes them on its new session.
  for (auto& lock : locks) {
    CHECK(lock.try_lock_for(avout::testing::scaled(5s)));
    lock.unlock();
  }
}
