// Atom watches across processes end on the newest value: with several processes updating and
// watching at once, and when a change is made while ZooKeeper is down.
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "base/callback_executor.hpp"  // white-box: a watcher over a value read from elsewhere
#include "runtime/value_watcher.hpp"
#include "support/holding_relay.hpp"
#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/atom-watch-test", stem);
}

// The newest value one watch reported.
class LastSeen {
 public:
  explicit LastSeen(avout::Atom<long>& atom) : atom_(atom) {
    atom_.add_watch("last", [this](const long&, const long& value) {
      std::lock_guard lock(mutex_);
      last_ = value;
      changed_.notify_all();
    });
  }
  ~LastSeen() { atom_.remove_watch("last"); }
  LastSeen(const LastSeen&) = delete;
  LastSeen& operator=(const LastSeen&) = delete;
  // True when the watch reports `wanted` within `timeout`.
  bool reaches(long wanted, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return last_ == wanted; });
  }
  // In a child process: throws naming what the watch saw unless it reaches `wanted`.
  void require(long wanted, std::chrono::milliseconds timeout) {
    if (reaches(wanted, timeout)) return;
    std::lock_guard lock(mutex_);
    throw std::runtime_error("the watch ended on " + std::to_string(last_) + ", not " +
                             std::to_string(wanted));
  }

 private:
  avout::Atom<long>& atom_;
  std::mutex mutex_;
  std::condition_variable changed_;
  long last_ = 0;
};

std::filesystem::path make_directory() {
  static std::mt19937_64 random{std::random_device{}()};
  auto path = std::filesystem::temp_directory_path() / ("avout-watch-" + std::to_string(random()));
  std::filesystem::create_directories(path);
  return path;
}

void wait_for_files(const std::filesystem::path& directory, int count,
                    std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int i = 0; i < count; ++i) {
    while (!std::filesystem::exists(directory / std::to_string(i))) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::sleep_for(20ms);
    }
  }
}

}  // namespace

TEST_CASE("every process's watch ends on the newest value while several processes update") {
  (void)avout::testing::shared_zookeeper();
  (void)avout::testing::shared_redis();
  for (const bool in_redis : {false, true}) {
    CAPTURE(in_redis);
    const std::string name = unique_name("counter");
    constexpr int processes = 4;
    constexpr int swaps = 60;
    const auto codes = avout::testing::run_in_processes(
        processes,
        [&](int) {
          avout::Client client(
              avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string()});
          avout::redis::Store redis(avout::testing::shared_redis().url());
          auto counter = in_redis ? client.atom<long>(name, 0, redis) : client.atom<long>(name, 0);
          LastSeen seen(counter);
          for (int i = 0; i < swaps; ++i) counter.swap([](long v) { return v + 1; });
          seen.require(processes * swaps, scaled(20s));
        },
        scaled(120s));
    CHECK(codes == std::vector<int>(processes, 0));
  }
}

TEST_CASE("a change made while ZooKeeper is down reaches every watching process") {
  // The value lives in Redis, so it can change while ZooKeeper, which announces changes, is
  // down; the writer's announcement must still reach the watchers once it is back.
  avout::testing::ZooKeeperServer zookeeper;
  auto& redis = avout::testing::shared_redis();
  const std::string name = unique_name("outage");
  const auto ready = make_directory();
  constexpr int watchers = 2;
  auto options =
      avout::ClientOptions{.hosts = zookeeper.connect_string(), .session_timeout = 20000ms};
  std::vector<avout::testing::ChildProcess> children;
  for (int index = 0; index < watchers; ++index) {
    children.emplace_back(index, [&](int i) {
      avout::Client client(options);
      avout::redis::Store store(redis.url());
      auto watched = client.atom<long>(name, 0, store);
      LastSeen seen(watched);
      std::ofstream(ready / std::to_string(i)).put('\n');
      seen.require(2, scaled(20s));
    });
  }
  wait_for_files(ready, watchers, scaled(30s));
  avout::Client client(options);
  avout::redis::Store store(redis.url());
  auto counter = client.atom<long>(name, 0, store);
  counter.swap([](long v) { return v + 1; });
  zookeeper.stop();
  std::thread restart([&] {
    std::this_thread::sleep_for(1s);
    zookeeper.start();
  });
  CHECK(counter.swap([](long v) { return v + 1; }) == 2);
  restart.join();
  for (auto& child : children) CHECK(child.wait(scaled(60s)) == 0);
  std::filesystem::remove_all(ready);
}

TEST_CASE("a change made while a watcher's session expires reaches it on the renewed session") {
  auto& zookeeper = avout::testing::shared_zookeeper();
  const auto options =
      avout::ClientOptions{.hosts = zookeeper.connect_string(), .session_timeout = 4000ms};
  avout::Client watcher(options);
  avout::Client writer(options);
  const std::string name = unique_name("expiring");
  auto watched = watcher.atom<long>(name, 0);
  LastSeen seen(watched);
  auto written = writer.atom<long>(name, 0);
  written.reset(1);
  REQUIRE(seen.reaches(1, scaled(10s)));

  // The change lands while the watcher's connection is down and its session about to end:
  // the server's notice for it dies with the session.
  std::thread expire([&] { watcher.session().expire_for_testing(); });
  const auto deadline = std::chrono::steady_clock::now() + scaled(10s);
  while (watcher.session().connected() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  written.reset(2);
  expire.join();
  CHECK(seen.reaches(2, scaled(10s)));
}

TEST_CASE(
    "a change whose notice gets no reply on the writer's connection still reaches a watcher") {
  auto& zookeeper = avout::testing::shared_zookeeper();
  avout::testing::HoldingRelay relay(zookeeper.port());
  avout::Client watcher(avout::ClientOptions{.hosts = zookeeper.connect_string()});
  avout::Client writer(
      avout::ClientOptions{.hosts = relay.connect_string(), .session_timeout = 3000ms});
  avout::redis::Store store(avout::testing::shared_redis().url());
  const std::string name = unique_name("unannounced");
  auto watched = watcher.atom<long>(name, 0, store);
  LastSeen seen(watched);
  auto written = writer.atom<long>(name, 0, store);
  written.reset(1);
  REQUIRE(seen.reaches(1, scaled(10s)));

  // The value goes to Redis; the writer's ZooKeeper connection then goes silent, so the
  // notice that announces it gets no reply and the client drops that connection.
  relay.hold();
  CHECK(written.reset(2) == 2);
  CHECK(seen.reaches(2, scaled(15s)));
  relay.release();
}

TEST_CASE(
    "a watch whose arm is slow to reach ZooKeeper still hears of a change right after its "
    "first read") {
  // The value lives outside ZooKeeper (like a Redis-held atom's) and a notice node announces
  // its changes. A first read made before the server has the watch could miss a change
  // announced in between: nothing would fire, and the watch would stay on the older value.
  auto& zookeeper = avout::testing::shared_zookeeper();
  avout::testing::HoldingRelay relay(zookeeper.port());
  avout::ZooKeeperSession watching(
      avout::SessionOptions{.hosts = relay.connect_string(), .session_timeout = 10000ms});
  avout::ZooKeeperSession writer(avout::SessionOptions{.hosts = zookeeper.connect_string()});
  const std::string notice = unique_name("notice");
  writer.create_recursive(notice);
  std::mutex mutex;
  std::string stored = "0";
  std::string last_read;  // what the watcher saw last: its first read's value or a change's
  const auto read = [&] {
    std::lock_guard lock(mutex);
    last_read = stored;
    return avout::to_bytes(stored);
  };
  const auto last = [&] {
    std::lock_guard lock(mutex);
    return last_read;
  };
  auto callbacks = std::make_shared<avout::detail::CallbackExecutor>();
  auto watcher = std::make_shared<avout::detail::ValueWatcher>(watching, notice, "a test value",
                                                               read, callbacks);
  relay.hold();
  auto adding = std::async(std::launch::async, [&] {
    watcher->add("k", [](const avout::Bytes&, const avout::Bytes&) {});
  });
  REQUIRE(relay.keeps(notice, scaled(5s)));  // the arm went out and waits in the relay
  (void)adding.wait_for(1000ms);             // old code: the first read is done by now
  {
    std::lock_guard lock(mutex);
    stored = "1";
  }
  writer.set(notice, {});  // announced before the arm reaches the server
  relay.release();
  adding.get();
  const auto deadline = std::chrono::steady_clock::now() + scaled(5s);
  while (last() != "1" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK(last() == "1");
  watcher->remove("k");
  callbacks->stop();
}

TEST_CASE("watches whose value cannot be read keep the callback thread free between their tries") {
  // A store that is down fails each read at once; each watch tries again 100 ms later. Those
  // pauses must not occupy the client's one callback thread, where a lock's loss is told too.
  auto& zookeeper = avout::testing::shared_zookeeper();
  avout::ZooKeeperSession session(avout::SessionOptions{.hosts = zookeeper.connect_string()});
  const std::string folder = unique_name("unreadable");
  constexpr int watched = 100;
  std::atomic<bool> store_down{false};
  std::atomic<int> failed_reads{0};
  const auto read = [&] {
    if (store_down) {
      ++failed_reads;
      throw avout::BackendError("the test's store is down");
    }
    return avout::to_bytes("0");
  };
  auto callbacks = std::make_shared<avout::detail::CallbackExecutor>();
  std::vector<std::shared_ptr<avout::detail::ValueWatcher>> watchers;
  for (int i = 0; i < watched; ++i) {
    const std::string notice = folder + "/" + std::to_string(i);
    session.create_recursive(notice);
    watchers.push_back(
        std::make_shared<avout::detail::ValueWatcher>(session, notice, notice, read, callbacks));
    watchers.back()->add("k", [](const avout::Bytes&, const avout::Bytes&) {});
  }
  store_down = true;
  for (int i = 0; i < watched; ++i) session.set(folder + "/" + std::to_string(i), {});
  const auto events_deadline = std::chrono::steady_clock::now() + scaled(10s);
  while (failed_reads < 1 && std::chrono::steady_clock::now() < events_deadline) {
    std::this_thread::sleep_for(5ms);
  }
  REQUIRE(failed_reads >= 1);          // the changes are being told
  std::this_thread::sleep_for(200ms);  // and all of them have reached the callback thread
  // A callback posted now runs about as soon as the failed reads ahead of it are done; with a
  // 100 ms sleep per failed read (the old code) it waited for about 10 s of them.
  auto ran = std::make_shared<std::promise<void>>();  // outlives this scope if the task does
  auto done = ran->get_future();
  const auto posted = std::chrono::steady_clock::now();
  callbacks->post([ran] { ran->set_value(); });
  const bool in_time = done.wait_for(scaled(1s)) == std::future_status::ready;
  const auto waited = std::chrono::steady_clock::now() - posted;
  INFO("the callback waited "
       << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count() << " ms");
  CHECK(in_time);
  CHECK(failed_reads >= watched);  // every watch kept trying
  for (auto& watcher : watchers) watcher->remove("k");
  callbacks->stop();
}

TEST_CASE(
    "remove_watch returns only once a running call of that watch has finished, and none follows") {
  avout::Client client(
      avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string()});
  auto atom = client.atom<long>(unique_name("remove-while-running"), 0);
  std::atomic<bool> entered{false};
  std::atomic<bool> finished{false};
  std::atomic<int> calls{0};
  atom.add_watch("slow", [&](const long&, const long&) {
    ++calls;
    entered = true;
    std::this_thread::sleep_for(500ms);  // the state it uses must outlive remove_watch
    finished = true;
  });
  atom.reset(1);
  const auto until = std::chrono::steady_clock::now() + scaled(10s);
  while (!entered && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
  REQUIRE(entered);
  atom.remove_watch("slow");
  CHECK(finished);
  const int after_removal = calls;
  atom.reset(2);
  std::this_thread::sleep_for(scaled(300ms));
  CHECK(calls == after_removal);
}

TEST_CASE("a watch may remove itself, and another watch, while it runs") {
  avout::Client client(
      avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string()});
  auto atom = client.atom<long>(unique_name("remove-self"), 0);
  std::atomic<int> calls{0};
  std::promise<void> removed;
  atom.add_watch("other", [](const long&, const long&) {});
  atom.add_watch("self", [&](const long&, const long&) {
    if (++calls > 1) return;
    atom.remove_watch("other");
    atom.remove_watch("self");  // on the callback thread: returns at once
    removed.set_value();
  });
  atom.reset(1);
  REQUIRE(removed.get_future().wait_for(scaled(10s)) == std::future_status::ready);
  atom.reset(2);
  std::this_thread::sleep_for(scaled(300ms));
  CHECK(calls == 1);
}

TEST_CASE(
    "a Redis-held atom's writer that dies between its write and its change notice still "
    "brings watchers in other processes to the new value") {
  const std::string name = unique_name("writer-dies");
  avout::redis::Store store{avout::testing::shared_redis().url()};
  const avout::ClientOptions options{.hosts = avout::testing::shared_zookeeper().connect_string(),
                                     .session_timeout = 4000ms};
  avout::Client watching(options);
  auto watched = watching.atom<long>(name, 0, store);
  LastSeen last(watched);
  {
    auto writer = std::make_unique<avout::Client>(options);
    auto atom = writer->atom<long>(name, 0, store);
    // Every notice the writer sends fails: the value lands in Redis, the notice never.
    avout::testing::fail_next(avout::testing::ZooKeeperCall::set, "/atom-notices" + name, 1000);
    CHECK_THROWS_AS(atom.swap(avout::Deadline::after(500ms), [](long v) { return v + 1; }),
                    avout::CommittedWithError);
    writer.reset();  // the writer dies: its session ends
  }
  CHECK(last.reaches(1, scaled(10s)));
}
