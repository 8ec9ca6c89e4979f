// Locks whose replies are lost on the wire: a create that landed but whose answer never
// came, and a client cut off from its server. A small TCP proxy between the client and a
// real ZooKeeper (the binary's shared one) drops the replies or every byte on demand.
#include <avout/avout.hpp>

#include "support/servers.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <list>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

/// Forwards 127.0.0.1:<port()> to a server port; can drop traffic and cut connections.
class Proxy {
 public:
  /// What the proxy lets through.
  enum class Mode { pass, drop_replies, drop_all, refuse };

  explicit Proxy(int target) : target_(target) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int yes = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in address = loopback(0);
    socklen_t length = sizeof address;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      throw std::runtime_error("proxy: cannot listen");
    }
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~Proxy() {
    stopping_ = true;
    acceptor_.join();
    std::lock_guard lock(mutex_);
    for (auto& pump : pumps_) pump.join();
    ::close(listener_);
  }
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  std::string connect_string() const { return "127.0.0.1:" + std::to_string(port_); }
  void set(Mode mode) { mode_ = mode; }
  /// Closes every open connection (the client sees ConnectionLoss and reconnects).
  void cut() { ++cuts_; }

 private:
  static sockaddr_in loopback(int port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return address;
  }

  void accept_loop() {
    while (!stopping_) {
      pollfd ready{listener_, POLLIN, 0};
      if (::poll(&ready, 1, 20) <= 0) continue;
      const int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0) continue;
      if (mode_ == Mode::refuse) {
        ::close(client);
        continue;
      }
      const int server = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in address = loopback(target_);
      if (::connect(server, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        ::close(client);
        ::close(server);
        continue;
      }
      std::lock_guard lock(mutex_);
      pumps_.emplace_back([this, client, server] { pump(client, server); });
    }
  }

  void pump(int client, int server) {
    const int cuts = cuts_;
    char buffer[65536];
    while (!stopping_ && cuts_ == cuts) {
      pollfd ends[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (::poll(ends, 2, 20) <= 0) continue;
      bool closed = false;
      for (int side = 0; side < 2 && !closed; ++side) {
        if (ends[side].revents == 0) continue;
        const ssize_t got = ::read(ends[side].fd, buffer, sizeof buffer);
        if (got <= 0) {
          closed = true;
          break;
        }
        const Mode mode = mode_;
        const bool reply = side == 1;
        if (mode == Mode::drop_all || (mode == Mode::drop_replies && reply)) continue;
        if (::write(reply ? client : server, buffer, static_cast<std::size_t>(got)) != got) closed = true;
      }
      if (closed) break;
    }
    ::close(client);
    ::close(server);
  }

  int target_;
  int port_ = 0;
  int listener_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<Mode> mode_{Mode::pass};
  std::atomic<int> cuts_{0};
  std::mutex mutex_;
  std::list<std::thread> pumps_;
  std::thread acceptor_;
};

std::string unique_name(const std::string& stem) {
  static std::mt19937_64 random{std::random_device{}()};
  return "/lost-reply/" + stem + "-" + std::to_string(random() % 1000000000);
}

std::size_t nodes_in(avout::Client& client, const std::string& folder) {
  return client.session().children(client.options().root + folder).size();
}

}  // namespace

TEST_CASE("a writer whose create reply was lost finds its own node and holds, leaving no phantom") {
  auto& server = avout::testing::shared_zookeeper();
  Proxy proxy(server.port());
  avout::Client client(avout::ClientOptions{.hosts = proxy.connect_string(), .session_timeout = 4000ms});
  avout::Client observer(avout::ClientOptions{.hosts = server.connect_string(), .session_timeout = 4000ms});
  const std::string name = unique_name("writer");
  auto lock = client.lock(name);
  proxy.set(Proxy::Mode::drop_replies);
  auto attempt = std::async(std::launch::async, [&] {
    const bool got = lock.try_lock_for(scaled(15s));
    const auto token = lock.fencing_token();
    if (got) lock.unlock();
    return std::pair{got, token};
  });
  std::this_thread::sleep_for(500ms);  // the create has landed; its reply was dropped
  proxy.set(Proxy::Mode::refuse);
  proxy.cut();
  std::this_thread::sleep_for(1s);  // a short outage: the session survives it
  proxy.set(Proxy::Mode::pass);
  const auto [got, token] = attempt.get();
  CHECK(got);
  CHECK(token > 0);
  CHECK(nodes_in(observer, "/locks" + name + "/writers") == 0);
  auto other = observer.lock(name);
  CHECK(other.try_lock_for(scaled(3s)));
  other.unlock();
}

TEST_CASE("a reader whose create reply was lost leaves no phantom that blocks writers") {
  auto& server = avout::testing::shared_zookeeper();
  Proxy proxy(server.port());
  avout::Client client(avout::ClientOptions{.hosts = proxy.connect_string(), .session_timeout = 4000ms});
  avout::Client observer(avout::ClientOptions{.hosts = server.connect_string(), .session_timeout = 4000ms});
  const std::string name = unique_name("reader");
  auto rw = client.read_write_lock(name);
  proxy.set(Proxy::Mode::drop_replies);
  auto attempt = std::async(std::launch::async, [&] {
    const bool got = rw.try_lock_shared_for(scaled(15s));
    if (got) rw.unlock_shared();
    return got;
  });
  std::this_thread::sleep_for(500ms);
  proxy.set(Proxy::Mode::refuse);
  proxy.cut();
  std::this_thread::sleep_for(1s);
  proxy.set(Proxy::Mode::pass);
  CHECK(attempt.get());
  CHECK(nodes_in(observer, "/rwlocks" + name + "/readers") == 0);
  auto writer = observer.read_write_lock(name);
  CHECK(writer.try_lock_for(scaled(3s)));  // no reader node of a live session is left inside
  writer.unlock();
}

TEST_CASE("a holder cut off from its server reports the hold lost before the server can expire it") {
  auto& server = avout::testing::shared_zookeeper();
  Proxy proxy(server.port());
  avout::Client client(avout::ClientOptions{.hosts = proxy.connect_string(), .session_timeout = 2000ms});
  avout::Client contender_client(avout::ClientOptions{.hosts = server.connect_string(), .session_timeout = 2000ms});
  const std::string name = unique_name("partition");
  auto lock = client.lock(name);
  lock.lock();
  auto contender = contender_client.lock(name);
  proxy.set(Proxy::Mode::drop_all);  // a silent partition: no reply, no ping gets through
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
  proxy.set(Proxy::Mode::pass);
  lock.unlock();  // the lost hold is dropped
}
