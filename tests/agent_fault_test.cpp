// Agents under faults: a send whose reply is lost, and stores restarted while actions are
// queued. An outage delays actions; it never loses or doubles one.
#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>
#include <avout/zookeeper_session.hpp>

#include "support/servers.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <future>
#include <list>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  static std::mt19937_64 random{std::random_device{}()};
  return "/agent-fault-test/" + stem + "-" + std::to_string(random() % 1000000000);
}

avout::ClientOptions options(const std::string& hosts) {
  return avout::ClientOptions{.hosts = hosts, .session_timeout = 4000ms};
}

using Log = std::vector<long>;

Log append(Log log, long value) {
  log.push_back(value);
  return log;
}

// A TCP relay to one server that can swallow the server's replies (a request that reached
// the server and was applied, whose reply never came), or everything (a client the server
// stops hearing from), and then cut every connection.
class ReplyLosingRelay {
 public:
  explicit ReplyLosingRelay(int server_port) : server_port_(server_port) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    const int yes = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in address = loopback(0);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_, 16) != 0) {
      throw std::runtime_error("relay: cannot listen");
    }
    socklen_t length = sizeof address;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~ReplyLosingRelay() {
    stopping_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    acceptor_.join();
    cut();
    std::lock_guard lock(mutex_);
    for (auto& link : links_) link.thread.join();
    ::close(listener_);
  }
  ReplyLosingRelay(const ReplyLosingRelay&) = delete;
  ReplyLosingRelay& operator=(const ReplyLosingRelay&) = delete;

  /// "127.0.0.1:<port>" for a client to connect through.
  std::string connect_string() const { return "127.0.0.1:" + std::to_string(port_); }
  /// From now on the server's bytes on the open connections are thrown away.
  void lose_replies() {
    std::lock_guard lock(mutex_);
    for (auto& link : links_) link.losing = true;
  }
  /// From now on both sides' bytes are thrown away, also on connections opened later.
  void isolate() {
    std::lock_guard lock(mutex_);
    isolated_ = true;
    for (auto& link : links_) link.losing = link.muted = true;
  }
  /// Closes every open connection; new ones relay faithfully.
  void cut() {
    std::lock_guard lock(mutex_);
    isolated_ = false;
    for (auto& link : links_) {
      ::shutdown(link.client, SHUT_RDWR);
      ::shutdown(link.server, SHUT_RDWR);
    }
  }

 private:
  struct Link {
    int client = -1;
    int server = -1;
    std::atomic<bool> losing{false};  // the server's bytes are dropped
    std::atomic<bool> muted{false};   // the client's bytes are dropped
    std::thread thread;
  };

  static sockaddr_in loopback(int port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return address;
  }

  void accept_loop() {
    while (!stopping_) {
      const int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0) return;
      const int server = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in address = loopback(server_port_);
      if (::connect(server, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        ::close(client);
        ::close(server);
        continue;
      }
      std::lock_guard lock(mutex_);
      auto& link = links_.emplace_back();
      link.client = client;
      link.server = server;
      link.losing = link.muted = isolated_;
      link.thread = std::thread([&link] { relay(link); });
    }
  }

  static void relay(Link& link) {
    pollfd fds[2] = {{link.client, POLLIN, 0}, {link.server, POLLIN, 0}};
    char buffer[65536];
    while (::poll(fds, 2, -1) > 0) {
      if (fds[0].revents != 0) {
        const auto got = ::read(link.client, buffer, sizeof buffer);
        if (got <= 0) break;
        if (!link.muted && ::write(link.server, buffer, static_cast<std::size_t>(got)) != got) {
          break;
        }
      }
      if (fds[1].revents != 0) {
        const auto got = ::read(link.server, buffer, sizeof buffer);
        if (got <= 0) break;
        if (!link.losing && ::write(link.client, buffer, static_cast<std::size_t>(got)) != got) {
          break;
        }
      }
    }
    ::close(link.client);
    ::close(link.server);
  }

  int server_port_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  bool isolated_ = false;  // guarded by mutex_
  std::thread acceptor_;
  std::mutex mutex_;
  std::list<Link> links_;  // a list: links stay put while their threads use them
};

// Sends five actions while the store is down, then brings it back: they wait, then all run.
void outage_delays_actions(avout::Store& store, const std::function<void()>& stop,
                           const std::function<void()>& start) {
  avout::Client client(options(avout::testing::shared_zookeeper().connect_string()));
  auto agent = client.agent<Log>(unique_name("outage"), {}, store);
  agent.send(append, 0);
  REQUIRE(agent.await_for(scaled(30s)));
  stop();
  for (long i = 1; i <= 5; ++i) agent.send(append, i);
  // Nothing can be stored: await must not report the actions done.
  CHECK_FALSE(agent.await_for(scaled(2s)));
  start();
  REQUIRE(agent.await_for(scaled(30s)));
  CHECK(agent.deref() == Log{0, 1, 2, 3, 4, 5});
  CHECK_FALSE(agent.error());
}

}  // namespace

TEST_CASE("a send whose reply was lost is found again: it runs once and blocks nobody") {
  auto& zookeeper = avout::testing::shared_zookeeper();
  ReplyLosingRelay relay(zookeeper.port());
  const std::string name = unique_name("lost-reply");
  avout::Client client(options(relay.connect_string()));
  auto agent = client.agent<Log>(name, {});
  avout::ZooKeeperSession observer(
      avout::SessionOptions{.hosts = zookeeper.connect_string(), .session_timeout = 4000ms});
  const std::string queue = "/avout/agents/queues" + name;
  agent.send(append, 0);  // the agent's head is cached from now on: a send is one create
  REQUIRE(agent.await_for(scaled(30s)));
  CHECK(agent.deref() == Log{0});  // a round trip: the replies of earlier reads are in

  relay.lose_replies();
  auto sent = std::async(std::launch::async, [&] { agent.send(append, 1); });
  // The create reached the server and its node is there; its reply is lost with the link.
  const auto deadline = std::chrono::steady_clock::now() + scaled(10s);
  while (observer.children(queue).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(observer.children(queue).size() == 1);
  relay.cut();
  CHECK_NOTHROW(sent.get());  // the send was found again: it stands

  agent.send(append, 2);
  CHECK(agent.await_for(scaled(30s)));
  // Another client's send is not blocked by a node left behind either.
  avout::Client other(options(zookeeper.connect_string()));
  auto other_agent = other.agent<Log>(name, {});
  other_agent.send(append, 3);
  CHECK(other_agent.await_for(scaled(30s)));
  CHECK(agent.deref() == Log{0, 1, 2, 3});
  CHECK(observer.children(queue).empty());
}

TEST_CASE("a send inside dosync whose commit reply was lost is found again and runs once") {
  auto& zookeeper = avout::testing::shared_zookeeper();
  ReplyLosingRelay relay(zookeeper.port());
  const std::string name = unique_name("lost-commit-reply");
  avout::Client client(options(relay.connect_string()));
  auto agent = client.agent<Log>(name, {});
  avout::ZooKeeperSession observer(
      avout::SessionOptions{.hosts = zookeeper.connect_string(), .session_timeout = 4000ms});
  const std::string queue = "/avout/agents/queues" + name;
  agent.send(append, 0);
  REQUIRE(agent.await_for(scaled(30s)));
  CHECK(agent.deref() == Log{0});

  std::atomic<bool> armed{false};
  auto committed = std::async(std::launch::async, [&] {
    client.dosync([&] {
      agent.send(append, 1);
      if (!armed.exchange(true)) relay.lose_replies();  // the commit's reply is lost
    });
  });
  const auto deadline = std::chrono::steady_clock::now() + scaled(10s);
  while (observer.children(queue).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(observer.children(queue).size() == 1);
  relay.cut();
  CHECK_NOTHROW(committed.get());
  CHECK(agent.await_for(scaled(30s)));
  CHECK(agent.deref() == Log{0, 1});
  CHECK(observer.children(queue).empty());
}

TEST_CASE("an agent's actions wait out a Redis restart: none is lost, await waits for them") {
  avout::testing::RedisServer redis_server(true);  // durable: the value survives the restart
  avout::redis::Store redis(redis_server.url());
  outage_delays_actions(redis, [&] { redis_server.stop(); }, [&] { redis_server.start(); });
}

TEST_CASE("an agent's actions wait out a PostgreSQL restart: none is lost, await waits for them") {
  avout::testing::PostgresServer postgres_server;
  avout::postgres::Store postgres(postgres_server.url());
  outage_delays_actions(postgres, [&] { postgres_server.stop(); },
                        [&] { postgres_server.start(); });
}

TEST_CASE("a send that vanished with an expired session makes await throw, not succeed") {
  auto& zookeeper = avout::testing::shared_zookeeper();
  ReplyLosingRelay relay(zookeeper.port());
  const std::string name = unique_name("expired");
  avout::Client holder(options(zookeeper.connect_string()));
  avout::Client sender({.hosts = relay.connect_string(), .session_timeout = 2000ms});
  auto held = holder.agent<Log>(name, {});
  auto agent = sender.agent<Log>(name, {});
  std::promise<void> expired;
  struct Release {  // even when the test fails: the holder's client must be able to stop
    std::promise<void>& expired;
    ~Release() {
      try {
        expired.set_value();
      } catch (const std::future_error&) {
      }
    }
  } release{expired};
  held.send_off([done = expired.get_future().share()](Log log) {
    done.wait();  // keeps the sender's action queued behind it until its session is gone
    log.push_back(-1);
    return log;
  });
  agent.send(append, 1);
  // The server stops hearing from the sender and expires its session, send node and all.
  relay.isolate();
  std::this_thread::sleep_for(4s);
  relay.cut();
  expired.set_value();
  CHECK_THROWS_AS(agent.await_for(scaled(30s)), avout::SessionExpired);
  REQUIRE(held.await_for(scaled(30s)));
  CHECK(agent.deref() == Log{-1});
  // The renewed session sends again, and await has nothing left to report.
  agent.send(append, 2);
  CHECK(agent.await_for(scaled(30s)));
  CHECK(agent.deref() == Log{-1, 2});
}
