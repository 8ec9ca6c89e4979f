// Locks whose replies are lost on the wire: a create that landed but whose answer never
// came, and a client cut off from its server. A small TCP proxy between the client and a
// real ZooKeeper (the binary's shared one, support/tcp_relay.hpp) drops the replies or every
// byte on demand.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/tcp_relay.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/lost-reply", stem);
}

// Nodes in the queue `folder` ("writers", "readers") of the lock `name`.
std::size_t nodes_in(avout::Client& client, const std::string& name, bool read_write,
                     const std::string& folder) {
  return client.session()
      .children(avout::inspect::lock_path(client, name, read_write) + "/" + folder)
      .size();
}

}  // namespace

TEST_CASE("a writer whose create reply was lost finds its own node and holds, leaving no phantom") {
  auto& server = avout::testing::shared_zookeeper();
  avout::testing::TcpRelay proxy(server.port());
  avout::Client client(
      avout::ClientOptions{.hosts = proxy.connect_string(), .session_timeout = 4000ms});
  avout::Client observer(
      avout::ClientOptions{.hosts = server.connect_string(), .session_timeout = 4000ms});
  const std::string name = unique_name("writer");
  auto lock = client.lock(name);
  proxy.set(avout::testing::TcpRelay::Mode::drop_replies);
  auto attempt = std::async(std::launch::async, [&] {
    const bool got = lock.try_lock_for(scaled(15s));
    const auto token = lock.fencing_token();
    if (got) lock.unlock();
    return std::pair{got, token};
  });
  std::this_thread::sleep_for(500ms);  // the create has landed; its reply was dropped
  proxy.set(avout::testing::TcpRelay::Mode::refuse);
  proxy.cut();
  std::this_thread::sleep_for(1s);  // a short outage: the session survives it
  proxy.set(avout::testing::TcpRelay::Mode::pass);
  const auto [got, token] = attempt.get();
  CHECK(got);
  CHECK(token > 0);
  CHECK(nodes_in(observer, name, false, "writers") == 0);
  auto other = observer.lock(name);
  CHECK(other.try_lock_for(scaled(3s)));
  other.unlock();
}

TEST_CASE("a reader whose create reply was lost leaves no phantom that blocks writers") {
  auto& server = avout::testing::shared_zookeeper();
  avout::testing::TcpRelay proxy(server.port());
  avout::Client client(
      avout::ClientOptions{.hosts = proxy.connect_string(), .session_timeout = 4000ms});
  avout::Client observer(
      avout::ClientOptions{.hosts = server.connect_string(), .session_timeout = 4000ms});
  const std::string name = unique_name("reader");
  auto rw = client.read_write_lock(name);
  proxy.set(avout::testing::TcpRelay::Mode::drop_replies);
  auto attempt = std::async(std::launch::async, [&] {
    const bool got = rw.try_lock_shared_for(scaled(15s));
    if (got) rw.unlock_shared();
    return got;
  });
  std::this_thread::sleep_for(500ms);
  proxy.set(avout::testing::TcpRelay::Mode::refuse);
  proxy.cut();
  std::this_thread::sleep_for(1s);
  proxy.set(avout::testing::TcpRelay::Mode::pass);
  CHECK(attempt.get());
  CHECK(nodes_in(observer, name, true, "readers") == 0);
  auto writer = observer.read_write_lock(name);
  CHECK(writer.try_lock_for(scaled(3s)));  // no reader node of a live session is left inside
  writer.unlock();
}

TEST_CASE(
    "a holder cut off from its server reports the hold lost before the server can expire it") {
  auto& server = avout::testing::shared_zookeeper();
  avout::testing::TcpRelay proxy(server.port());
  avout::Client client(
      avout::ClientOptions{.hosts = proxy.connect_string(), .session_timeout = 2000ms});
  avout::Client contender_client(
      avout::ClientOptions{.hosts = server.connect_string(), .session_timeout = 2000ms});
  const std::string name = unique_name("partition");
  auto lock = client.lock(name);
  lock.lock();
  auto contender = contender_client.lock(name);
  proxy.set(avout::testing::TcpRelay::Mode::drop_all);  // a silent partition: no reply, no ping
                                                        // gets through
  auto taken = std::async(std::launch::async, [&] {
    const bool got = contender.try_lock_for(scaled(15s));
    const auto at = std::chrono::steady_clock::now();
    if (got) contender.unlock();
    return std::pair{got, at};
  });
  // The last moment this thread still saw its hold, polled until the contender has it.
  auto held_until = std::chrono::steady_clock::now();
  while (taken.wait_for(0s) != std::future_status::ready) {
    if (lock.is_held()) held_until = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(1ms);
  }
  const auto [got, taken_at] = taken.get();
  CHECK(got);
  CHECK(held_until < taken_at);  // never two holders at once, as far as each can tell
  proxy.set(avout::testing::TcpRelay::Mode::pass);
  lock.unlock();  // the lost hold is dropped
}
