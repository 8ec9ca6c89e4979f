// Locks across session changes: what an expired session leaves behind (nothing), what it
// must not touch on the next session (other writers' gates), and lock handles that end
// while a session event is being delivered.
#include <avout/avout.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/lock-session", stem);
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 2000ms};
}

}  // namespace

TEST_CASE("a soft writer's gate survives the expiry of the previous holder's session") {
  // timed_soft closes the same kind of gate; one policy keeps the test short.
  for (auto policy : {avout::WriterPolicy::soft}) {
    avout::Client first_client(options());
    avout::Client second_client(options());
    avout::Client reader_client(options());
    const std::string name = unique_name("gate");
    auto first = first_client.read_write_lock(name, policy, 50ms);
    auto second = second_client.read_write_lock(name, policy, 50ms);
    auto reader = reader_client.read_write_lock(name, policy, 50ms);
    first.lock();
    std::promise<void> release;
    std::promise<bool> second_holds;
    auto second_thread = std::async(std::launch::async, [&] {
      const bool got = second.try_lock_for(scaled(30s));
      second_holds.set_value(got);
      release.get_future().wait();
      if (got) second.unlock();
    });
    std::this_thread::sleep_for(200ms);  // the second writer queues
    first_client.session().expire_for_testing();
    REQUIRE(second_holds.get_future().get());
    std::this_thread::sleep_for(500ms);  // the first client is on its new session by now
    // The second writer holds: no reader may enter.
    auto entered = std::async(std::launch::async, [&] {
      const bool got = reader.try_lock_shared_for(300ms);
      if (got) reader.unlock_shared();
      return got;
    });
    CHECK_FALSE(entered.get());
    release.set_value();
    second_thread.get();
    first.unlock();  // the lost hold is dropped
  }
}

TEST_CASE("a reader whose session was renewed while it waited leaves no live node behind") {
  avout::Client holder_client(options());
  avout::Client reader_client(options());
  avout::Client writer_client(options());
  const std::string name = unique_name("renewed");
  auto holder = holder_client.read_write_lock(name);
  auto reader = reader_client.read_write_lock(name);
  holder.lock();
  auto reading = std::async(std::launch::async, [&] {
    try {
      const bool got = reader.try_lock_shared_for(scaled(10s));
      if (got) reader.unlock_shared();
    } catch (const avout::Error&) {
      // LockLost or SessionExpired: the wait saw its session end; either is a fair answer
    }
  });
  std::this_thread::sleep_for(200ms);  // the reader waits behind the writer
  reader_client.session().expire_for_testing();
  std::this_thread::sleep_for(500ms);  // the reader's client is on its new session
  holder.unlock();
  reading.get();
  auto writer = writer_client.read_write_lock(name);
  CHECK(writer.try_lock_for(scaled(3s)));  // no reader node of the new session was left
  writer.unlock();
}

TEST_CASE("a session listener may remove itself and others while a session event is delivered") {
  avout::Client client(options());
  auto& session = client.session();
  std::atomic<int> later_calls{0};
  std::atomic<int> removed_calls{0};
  std::uint64_t self = 0;
  std::uint64_t removed = 0;
  std::atomic<bool> done{false};
  self = session.add_listener([&, text = std::string(200, 'x')](avout::SessionState) {
    if (done.exchange(true)) return;
    session.remove_listener(self);
    session.remove_listener(removed);
    // The closure still runs: its captures must be alive.
    CHECK(text == std::string(200, 'x'));
  });
  removed = session.add_listener([&](avout::SessionState) { ++removed_calls; });
  session.add_listener([&](avout::SessionState) { ++later_calls; });
  session.expire_for_testing();
  const auto deadline = std::chrono::steady_clock::now() + scaled(10s);
  while (later_calls < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  CHECK(later_calls >= 2);    // disconnected, expired, connected: the others still hear them
  CHECK(removed_calls == 0);  // removed before its turn: never called
}

// A process frozen (SIGSTOP, a long GC pause, a stalled VM) past its session timeout may have
// lost its hold to another process by the time it runs again; its client hears of the expiry
// only later. The hold must not be reported as held in between.
TEST_CASE("a holder frozen past its session timeout is not held when it resumes") {
  const std::string name = unique_name("frozen");
  const auto held_file =
      std::filesystem::temp_directory_path() / ("avout-frozen-" + name.substr(name.rfind('-') + 1));
  avout::testing::ChildProcess holder(0, [&](int) {
    avout::Client client(options());
    auto lock = client.lock(name);
    lock.lock();
    // Taken before the parent may stop this process, and then only at the start of each
    // check: a stop anywhere, even inside is_held(), widens the gap between two starts.
    auto previous = std::chrono::steady_clock::now();
    std::ofstream(held_file) << "held";
    const auto deadline = previous + scaled(60s);
    while (std::chrono::steady_clock::now() < deadline) {
      const auto started = std::chrono::steady_clock::now();
      const bool held = lock.is_held();
      // The first check begun after a long stop: the process was frozen before it.
      if (started - previous > 1500ms) {
        if (held)
          throw std::runtime_error(
              "is_held() was true right after a freeze that outlasted the session");
        return;
      }
      previous = started;
      std::this_thread::sleep_for(10ms);
    }
    throw std::runtime_error("never frozen");
  });
  const auto wait_until = std::chrono::steady_clock::now() + scaled(30s);
  while (!std::filesystem::exists(held_file) && std::chrono::steady_clock::now() < wait_until) {
    std::this_thread::sleep_for(20ms);
  }
  REQUIRE(std::filesystem::exists(held_file));
  holder.signal(SIGSTOP);
  const auto stopped = std::chrono::steady_clock::now();
  {
    avout::Client client(options());
    auto lock = client.lock(name);
    // Taking the lock proves the frozen holder's session ended.
    REQUIRE(lock.try_lock_for(scaled(30s)));
    // The session may end about a second into the stop (its last ping can be a second old
    // when the holder's ZooKeeper thread runs late): keep the stop well past the holder's
    // 1.5 s threshold.
    std::this_thread::sleep_until(stopped + 3s);
    holder.signal(SIGCONT);
    CHECK(holder.wait(scaled(30s)) == 0);
    lock.unlock();
  }
  std::filesystem::remove(held_file);
}
