// Lock waits keep their deadlines while the server answers nothing (frozen, or its answers
// held up on the way): the relay of support/tcp_relay.hpp keeps what the client sends until
// released, with the connection open, as a SIGSTOPped server would. A request in flight is
// abandoned at the deadline; a create whose outcome is unknown then leaves no node behind
// once it lands.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/tcp_relay.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <future>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/frozen", stem);
}

avout::ClientOptions options(const std::string& hosts) {
  return avout::ClientOptions{.hosts = hosts, .session_timeout = 6000ms};
}

// Past a deadline, the time a wait may take to notice it and return on a loaded machine
// (the promise is about 50 ms; the client would take 4 s, two thirds of the session timeout).
constexpr auto margin = 700ms;

std::size_t nodes_in(avout::Client& client, const std::string& folder) {
  return client.session().children(folder).size();
}

// Waits until `folder` has `count` children; true when it did in time.
bool wait_for_nodes(avout::Client& client, const std::string& folder, std::size_t count) {
  const auto until = std::chrono::steady_clock::now() + scaled(10s);
  while (nodes_in(client, folder) != count) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

}  // namespace

TEST_CASE("a lock attempt whose create gets no answer returns by its deadline and leaves no node") {
  auto& server = avout::testing::shared_zookeeper();
  avout::testing::TcpRelay proxy(server.port());
  avout::Client client(options(proxy.connect_string()));
  avout::Client observer(options(server.connect_string()));
  const std::string name = unique_name("create");
  bool read_write = false;
  std::function<bool()> attempt;
  auto lock = client.lock(name);
  auto rw = client.read_write_lock(name);
  SUBCASE("a writer") {
    attempt = [&] { return lock.try_lock_for(1s); };
  }
  SUBCASE("a reader") {
    read_write = true;
    attempt = [&] { return rw.try_lock_shared_for(1s); };
  }
  const std::string folder = avout::inspect::lock_path(observer, name, read_write) +
                             (read_write ? "/readers" : "/writers");
  proxy.hold();  // from now on the server hears nothing of this client
  const auto start = std::chrono::steady_clock::now();
  const bool got = attempt();
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK_FALSE(got);
  CHECK(took < 1s + margin);
  proxy.release();  // the create lands now, in a session that lives on
  CHECK(wait_for_nodes(observer, folder, 0));
  auto other = observer.lock(name);
  const bool taken = other.try_lock_for(scaled(5s));
  CHECK(taken);
  if (taken) other.unlock();
}

TEST_CASE("a waiter whose deadline passes while the server answers nothing gets Timeout by it") {
  auto& server = avout::testing::shared_zookeeper();
  avout::testing::TcpRelay proxy(server.port());
  avout::Client client(options(proxy.connect_string()));
  avout::Client observer(options(server.connect_string()));
  const std::string name = unique_name("waiter");
  const std::string writers = avout::inspect::lock_path(observer, name) + "/writers";
  auto holder = observer.lock(name);
  holder.lock();
  auto lock = client.lock(name);
  auto waiting = std::async(std::launch::async, [&] {
    const auto start = std::chrono::steady_clock::now();
    bool timed_out = false;
    try {
      lock.lock(avout::Deadline::after(2s));
      lock.unlock();
    } catch (const avout::Timeout&) {
      timed_out = true;
    }
    return std::pair{timed_out, std::chrono::steady_clock::now() - start};
  });
  REQUIRE(wait_for_nodes(observer, writers, 2));  // queued behind the holder, watching it
  proxy.hold();
  const auto [timed_out, took] = waiting.get();
  CHECK(timed_out);
  CHECK(took < 2s + margin);
  proxy.release();
  CHECK(wait_for_nodes(observer, writers, 1));  // the waiter's node went; the holder's stays
  holder.unlock();
  CHECK(wait_for_nodes(observer, writers, 0));
}
