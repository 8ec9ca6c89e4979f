// Lock and ReadWriteLock against a real ZooKeeper, from real processes: mutual exclusion,
// FIFO, reentrancy, timeouts, dead holders, lost sessions, no herd, writer policies.
#include <avout/avout.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/lock-test", stem);
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 2000ms};
}

std::size_t waiting_nodes(avout::Client& client, const std::string& name) {
  return client.session().children(avout::inspect::lock_path(client, name) + "/writers").size();
}

}  // namespace

TEST_CASE("8 processes incrementing a plain value under the lock end at the exact total") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("exclusion");
  const std::string counter = "/lock-test-counter" + name.substr(name.rfind('-'));
  {
    avout::Client setup(options());
    setup.session().create(counter, avout::to_bytes("0"));
  }
  const auto codes = avout::testing::run_in_processes(
      8,
      [&](int) {
        avout::Client client(options());
        auto lock = client.lock(name);
        for (int i = 0; i < 25; ++i) {
          std::scoped_lock held(lock);
          // A read-modify-write that loses updates unless the lock excludes the others.
          const auto bytes = client.session().get(counter).data;
          const long value = std::stol(std::string(bytes.begin(), bytes.end()));
          client.session().set(counter, avout::to_bytes(std::to_string(value + 1)), -1);
        }
      },
      scaled(180s));
  CHECK(codes == std::vector<int>(8, 0));
  avout::Client client(options());
  const auto bytes = client.session().get(counter).data;
  CHECK(std::string(bytes.begin(), bytes.end()) == "200");
  CHECK(waiting_nodes(client, name) == 0);
}

TEST_CASE("waiters acquire in arrival order, each woken by its predecessor only") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("fifo");
  const auto order_file =
      std::filesystem::temp_directory_path() / ("avout-fifo" + name.substr(name.rfind('-')));
  constexpr int waiters = 5;
  avout::testing::StartSignal go;
  std::vector<std::unique_ptr<avout::testing::ChildProcess>> children;
  for (int i = 0; i < waiters; ++i) {
    children.push_back(std::make_unique<avout::testing::ChildProcess>(i, [&](int index) {
      go.wait();
      // Arrive in index order: wait until every earlier waiter has its node.
      avout::Client client(options());
      while (waiting_nodes(client, name) < static_cast<std::size_t>(index) + 1) {
        std::this_thread::sleep_for(20ms);
      }
      auto lock = client.lock(name);
      const auto before = client.session().statistics().requests;
      lock.lock();
      const auto requests = client.session().statistics().requests - before;
      std::ofstream(order_file, std::ios::app) << index << ' ' << requests << '\n';
      std::this_thread::sleep_for(50ms);
      lock.unlock();
    }));
  }
  avout::Client client(options());
  auto lock = client.lock(name);
  lock.lock();  // the parent holds first; the children queue behind it
  go.release();
  const auto deadline = std::chrono::steady_clock::now() + scaled(30s);
  while (waiting_nodes(client, name) < waiters + 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  REQUIRE(waiting_nodes(client, name) == waiters + 1);
  lock.unlock();
  for (auto& child : children) CHECK(child->wait(scaled(60s)) == 0);
  std::ifstream in(order_file);
  std::vector<int> order;
  int index = 0;
  std::uint64_t requests = 0;
  while (in >> index >> requests) {
    order.push_back(index);
    // create, list, watch the predecessor, list again when it goes: no herd wake-ups.
    CHECK(requests <= 6);
  }
  std::filesystem::remove(order_file);
  CHECK(order == std::vector<int>{0, 1, 2, 3, 4});
}

TEST_CASE("holds are reentrant per thread; other threads wait; timeouts leave no node") {
  (void)avout::testing::shared_zookeeper();
  avout::Client client(options());
  const std::string name = unique_name("reentrant");
  auto lock = client.lock(name);
  lock.lock();
  lock.lock();
  CHECK(lock.is_held());
  const auto token = lock.fencing_token();
  CHECK(token > 0);
  auto other = std::async(std::launch::async, [&] {
    const bool got = lock.try_lock_for(300ms);
    return std::pair{got, lock.is_held()};
  });
  const auto [other_got, other_held] = other.get();
  CHECK_FALSE(other_got);
  CHECK_FALSE(other_held);
  CHECK(waiting_nodes(client, name) == 1);  // the timed-out attempt removed its node
  lock.unlock();
  CHECK(lock.is_held());  // one hold left
  lock.unlock();
  CHECK_FALSE(lock.is_held());
  CHECK(waiting_nodes(client, name) == 0);
  auto next = std::async(std::launch::async, [&] {
    std::unique_lock held(lock, std::defer_lock);
    const bool got = held.try_lock_for(5s);
    return std::pair{got, lock.fencing_token()};
  });
  const auto [next_got, next_token] = next.get();
  CHECK(next_got);
  CHECK(next_token > token);                        // fencing tokens strictly increase
  CHECK_THROWS_AS(lock.unlock(), avout::LockLost);  // a thread without a hold
}

TEST_CASE("destroying the last handle of a held lock releases its holds") {
  (void)avout::testing::shared_zookeeper();
  avout::Client client(options());
  avout::Client other(options());
  const std::string name = unique_name("abandoned");
  {
    auto lock = client.lock(name);
    lock.lock();
    lock.lock();  // nested: one node all the same
    auto second = std::async(std::launch::async, [&] { return lock.try_lock_for(200ms); });
    CHECK_FALSE(second.get());
  }
  // No handle is left that could unlock: another process, and this one, get the lock.
  auto elsewhere = other.lock(name);
  REQUIRE(elsewhere.try_lock_for(scaled(5s)));
  elsewhere.unlock();
  auto again = client.lock(name);
  REQUIRE(again.try_lock_for(scaled(5s)));
  again.unlock();
  CHECK(waiting_nodes(client, name) == 0);

  // A read-write lock: a soft writer's gate and place in line go, and so does a reader's node.
  const std::string rw_name = unique_name("abandoned-rw");
  const std::string folder = avout::inspect::lock_path(client, rw_name, true);
  auto writer = other.read_write_lock(rw_name, avout::WriterPolicy::soft);
  {
    auto rw = client.read_write_lock(rw_name, avout::WriterPolicy::soft);
    rw.lock();
    CHECK(client.session().children(folder + "/gates").size() == 1);
  }
  REQUIRE(writer.try_lock_for(scaled(5s)));
  writer.unlock();
  {
    auto rw = client.read_write_lock(rw_name, avout::WriterPolicy::soft);
    rw.lock_shared();
    CHECK(client.session().children(folder + "/readers").size() == 1);
  }
  REQUIRE(writer.try_lock_for(scaled(5s)));
  writer.unlock();
  for (const char* kind : {"/writers", "/readers", "/gates"}) {
    INFO(kind);
    CHECK(client.session().children(folder + kind).empty());
  }
}

TEST_CASE("a SIGKILLed holder's lock passes on when its session ends") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("killed");
  avout::testing::StartSignal held;
  avout::testing::ChildProcess holder(0, [&](int) {
    avout::Client client(options());
    auto lock = client.lock(name);
    lock.lock();
    held.release();
    std::this_thread::sleep_for(60s);
  });
  held.wait();
  avout::Client client(options());
  auto lock = client.lock(name);
  CHECK_FALSE(lock.try_lock());
  holder.signal(SIGKILL);
  (void)holder.wait(scaled(10s));
  CHECK(lock.try_lock_for(scaled(10s)));  // 2 s session timeout, then the node is gone
  lock.unlock();
}

TEST_CASE("a lost session tells the holder: is_held false, callback, LockLost") {
  (void)avout::testing::shared_zookeeper();
  avout::Client client(options());
  auto ref = client.ref<long>(unique_name("guarded-ref"), 0);
  auto lock = client.lock(unique_name("expired"));
  std::promise<void> told;
  lock.on_lost([&] { told.set_value(); });
  lock.lock();
  client.dosync(avout::guarded_by(lock), [&] { ref.alter([](long v) { return v + 1; }); });
  CHECK(ref.deref() == 1);
  client.session().expire_for_testing();
  CHECK(told.get_future().wait_for(scaled(10s)) == std::future_status::ready);
  CHECK_FALSE(lock.is_held());
  CHECK_THROWS_AS(lock.ensure_held(), avout::LockLost);
  CHECK_THROWS_AS(
      client.dosync(avout::guarded_by(lock), [&] { ref.alter([](long v) { return v + 1; }); }),
      avout::LockLost);
  CHECK(ref.deref() == 1);
  lock.unlock();                                    // drops the lost hold quietly
  CHECK_THROWS_AS(lock.unlock(), avout::LockLost);  // and it is gone
  CHECK(lock.try_lock_for(scaled(10s)));            // and the lock works on the new session
  lock.unlock();
}

TEST_CASE("read-write lock: readers share, writers exclude, an upgrade throws") {
  (void)avout::testing::shared_zookeeper();
  avout::Client client(options());
  auto rw = client.read_write_lock(unique_name("rw"));
  std::shared_lock reading(rw);
  auto second_reader = std::async(std::launch::async, [&] {
    const bool got = rw.try_lock_shared_for(2s);
    if (got) rw.unlock_shared();
    return got;
  });
  CHECK(second_reader.get());
  CHECK_THROWS_AS(rw.lock(), avout::Error);  // this thread reads: no upgrade
  auto writer = std::async(std::launch::async, [&] { return rw.try_lock_for(300ms); });
  CHECK_FALSE(writer.get());
  reading.unlock();
  auto later_writer = std::async(std::launch::async, [&] {
    std::unique_lock writing(rw, std::defer_lock);
    if (!writing.try_lock_for(5s)) return false;
    rw.lock_shared();  // a writer may read too
    rw.unlock_shared();
    return true;
  });
  CHECK(later_writer.get());
}

TEST_CASE(
    "writer policies: hard blocks new readers, soft lets them in, timed_soft waits for quiet") {
  (void)avout::testing::shared_zookeeper();
  avout::Client client(options());
  auto observe = [&](avout::WriterPolicy policy) {
    auto rw = client.read_write_lock(unique_name("policy"), policy, 600ms);
    std::promise<void> release_first;
    auto first_reader = std::async(std::launch::async, [&] {
      rw.lock_shared();
      release_first.get_future().wait();
      rw.unlock_shared();
    });
    std::this_thread::sleep_for(200ms);
    auto writer = std::async(std::launch::async, [&] {
      const bool got = rw.try_lock_for(10s);
      const auto at = std::chrono::steady_clock::now();
      if (got) rw.unlock();
      return std::pair{got, at};
    });
    std::this_thread::sleep_for(300ms);  // the writer waits now
    auto late_reader = std::async(std::launch::async, [&] {
      const bool got = rw.try_lock_shared_for(400ms);
      if (got) rw.unlock_shared();
      return got;
    });
    const bool late_reader_entered = late_reader.get();
    const auto released = std::chrono::steady_clock::now();
    release_first.set_value();
    first_reader.get();
    const auto [writer_got, writer_at] = writer.get();
    CHECK(writer_got);
    return std::pair{late_reader_entered, writer_at - released};
  };
  const auto [hard_reader, hard_wait] = observe(avout::WriterPolicy::hard);
  CHECK_FALSE(hard_reader);
  const auto [soft_reader, soft_wait] = observe(avout::WriterPolicy::soft);
  CHECK(soft_reader);
  const auto [timed_reader, timed_wait] = observe(avout::WriterPolicy::timed_soft);
  CHECK(timed_reader);
  CHECK(timed_wait >= 600ms);  // the quiet period after the last reader left
  (void)hard_wait;
  (void)soft_wait;
}

TEST_CASE("hard policy: successive writers keep a later reader out") {
  (void)avout::testing::shared_zookeeper();
  avout::Client client(options());
  auto rw = client.read_write_lock(unique_name("succession"), avout::WriterPolicy::hard);
  rw.lock();  // writer 1 (this thread)
  auto second_writer = std::async(std::launch::async, [&] {
    const bool got = rw.try_lock_for(10s);
    std::this_thread::sleep_for(300ms);  // hold a while
    if (got) rw.unlock();
    return got;
  });
  std::this_thread::sleep_for(200ms);  // writer 2 queues
  auto reader = std::async(std::launch::async, [&] {
    const auto started = std::chrono::steady_clock::now();
    const bool got = rw.try_lock_shared_for(10s);
    if (got) rw.unlock_shared();
    return std::pair{got, std::chrono::steady_clock::now() - started};
  });
  std::this_thread::sleep_for(200ms);  // the reader waits too
  rw.unlock();                         // writer 2 must come before the reader
  CHECK(second_writer.get());
  const auto [reader_got, reader_waited] = reader.get();
  CHECK(reader_got);
  CHECK(reader_waited >= 450ms);  // 200 ms behind writer 1, then writer 2's 300 ms
}

TEST_CASE("a server restart neither strands a waiter nor leaves a released node behind") {
  avout::testing::ZooKeeperServer server;
  auto private_options = [&] {
    return avout::ClientOptions{.hosts = server.connect_string(), .session_timeout = 4000ms};
  };
  avout::Client holder(private_options());
  avout::Client waiter(private_options());
  const std::string name = unique_name("restart");
  auto held = holder.lock(name);
  auto wanted = waiter.lock(name);
  held.lock();
  auto waiting = std::async(std::launch::async, [&] { return wanted.try_lock_for(30s); });
  std::this_thread::sleep_for(300ms);
  server.stop();
  std::this_thread::sleep_for(1s);  // shorter than the session timeout: sessions survive
  server.start();
  std::this_thread::sleep_for(500ms);
  held.unlock();
  CHECK(waiting.get());  // the wait rode out the outage and got the lock
  // Released during an outage: the node goes once the client is back, not never.
  server.stop();
  auto releasing = std::async(std::launch::async, [&] { wanted.unlock(); });
  std::this_thread::sleep_for(1s);
  server.start();
  releasing.get();
  CHECK(held.try_lock_for(10s));
  held.unlock();
}

TEST_CASE("unlock by a thread that holds nothing throws LockLost and frees nothing") {
  (void)avout::testing::shared_zookeeper();
  avout::Client client(options());
  const std::string name = unique_name("not-held");
  auto lock = client.lock(name);
  lock.lock();
  auto stranger = std::async(std::launch::async, [&] {
    try {
      lock.unlock();
      return false;
    } catch (const avout::LockLost& error) {
      return std::string(error.what()).find(name) != std::string::npos;
    }
  });
  CHECK(stranger.get());
  CHECK(lock.is_held());
  CHECK(waiting_nodes(client, name) == 1);
  lock.unlock();
  CHECK_THROWS_AS(lock.unlock(), avout::LockLost);  // one unlock too many
}

TEST_CASE("read-write lock: fencing tokens strictly increase across write and read holds") {
  (void)avout::testing::shared_zookeeper();
  avout::Client client(options());
  for (auto policy :
       {avout::WriterPolicy::hard, avout::WriterPolicy::soft, avout::WriterPolicy::timed_soft}) {
    auto rw = client.read_write_lock(unique_name("tokens"), policy, 10ms);
    std::uint64_t previous = 0;
    for (int step = 0; step < 6; ++step) {
      const bool write = step % 2 == 0;
      if (write)
        rw.lock();
      else
        rw.lock_shared();
      const auto token = write ? rw.write_lock().fencing_token() : rw.read_lock().fencing_token();
      CHECK(token > previous);
      previous = token;
      if (write)
        rw.unlock();
      else
        rw.unlock_shared();
    }
  }
}

TEST_CASE("locks whose names nest inside each other both work, whichever comes first") {
  (void)avout::testing::shared_zookeeper();
  avout::Client client(options());
  for (const char* inner : {"/a", "/writers", "/readers", "/gates", "/gate"}) {
    for (bool outer_first : {true, false}) {
      const std::string outer_name = unique_name("nest");
      std::optional<avout::ReadWriteLock> outer, nested;
      if (outer_first) outer.emplace(client.read_write_lock(outer_name, avout::WriterPolicy::soft));
      nested.emplace(client.read_write_lock(outer_name + inner, avout::WriterPolicy::soft));
      if (!outer_first)
        outer.emplace(client.read_write_lock(outer_name, avout::WriterPolicy::soft));
      auto plain_outer = client.lock(outer_name);
      auto plain_nested = client.lock(outer_name + inner);
      nested->lock();
      plain_nested.lock();
      CHECK(outer->try_lock_for(scaled(2s)));
      CHECK(plain_outer.try_lock_for(scaled(2s)));
      plain_outer.unlock();
      outer->unlock();
      auto reading = std::async(std::launch::async, [&] {
        const bool got = outer->try_lock_shared_for(scaled(2s));
        if (got) outer->unlock_shared();
        return got;
      });
      CHECK(reading.get());
      plain_nested.unlock();
      nested->unlock();
    }
  }
}

TEST_CASE("hard policy: waiting readers are not woken by every change of the writer queue") {
  (void)avout::testing::shared_zookeeper();
  avout::Client holder_client(options());
  avout::Client writers_client(options());
  avout::Client readers_client(options());
  const std::string name = unique_name("herd");
  auto holder = holder_client.read_write_lock(name);
  auto writers = writers_client.read_write_lock(name);
  auto readers = readers_client.read_write_lock(name);
  holder.lock();
  constexpr int reader_count = 3;
  std::vector<std::future<bool>> reading;
  for (int i = 0; i < reader_count; ++i) {
    reading.push_back(std::async(std::launch::async, [&] {
      const bool got = readers.try_lock_shared_for(scaled(30s));
      if (got) readers.unlock_shared();
      return got;
    }));
  }
  std::this_thread::sleep_for(300ms);  // the readers wait
  const auto before = readers_client.session().statistics().requests;
  // Writers join the queue one by one and time out again: 8 changes of the queue.
  for (int i = 0; i < 4; ++i) {
    auto joining = std::async(std::launch::async, [&] { return writers.try_lock_for(150ms); });
    CHECK_FALSE(joining.get());
    std::this_thread::sleep_for(50ms);
  }
  const auto during = readers_client.session().statistics().requests - before;
  holder.unlock();
  for (auto& reader : reading) CHECK(reader.get());
  // Each reader looks again at most when the newest writer it waits on leaves.
  CHECK(during <= reader_count * 5);
}
