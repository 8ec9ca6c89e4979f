#pragma once
// A TCP relay for fault tests: sits between clients and a real server and can hold back what
// the connections open at one moment send, delivering it later (a network delay: a request
// the client gave up on still reaches the server, or its reply never comes back in time).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace avout::testing {

namespace relay_detail {

inline int listen_on_loopback(int& port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || listen(fd, 16) != 0) {
    close(fd);
    throw std::runtime_error("relay: cannot listen");
  }
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  port = ntohs(address.sin_port);
  return fd;
}

inline int connect_to_loopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    throw std::runtime_error("relay: cannot reach the server");
  }
  return fd;
}

inline void send_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t sent = send(fd, data, size, MSG_NOSIGNAL);
    if (sent <= 0) return;  // the peer is gone: what it would have got is dropped
    data += sent;
    size -= static_cast<std::size_t>(sent);
  }
}

}  // namespace relay_detail

/// Forwards TCP between clients and a server; hold() makes the connections open at that moment
/// keep what their clients send, release() sends it on (also after the client closed).
class HoldingRelay {
 public:
  /// Listens on a free loopback port and relays to 127.0.0.1:`server_port`.
  explicit HoldingRelay(int server_port) : server_port_(server_port) {
    listener_ = relay_detail::listen_on_loopback(port_);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~HoldingRelay() {
    stopping_ = true;
    acceptor_.join();
    for (auto& connection : connections_) connection.thread.join();
    close(listener_);
  }
  HoldingRelay(const HoldingRelay&) = delete;
  HoldingRelay& operator=(const HoldingRelay&) = delete;

  /// "tcp://127.0.0.1:<port>", for a Redis store.
  std::string url() const { return "tcp://127.0.0.1:" + std::to_string(port_); }
  /// "127.0.0.1:<port>", for a ZooKeeper client.
  std::string connect_string() const { return "127.0.0.1:" + std::to_string(port_); }
  /// From now on, the connections open now keep what their clients send.
  void hold() {
    std::lock_guard lock(mutex_);
    for (auto& connection : connections_) connection.held = true;
  }
  /// Sends everything kept to the server, and lets later bytes through.
  void release() { released_ = true; }
  /// True once the server answered (and closed) every connection that kept bytes.
  bool delivered(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] {
      for (auto& connection : connections_) {
        if (connection.kept_some && !connection.finished) return false;
      }
      return true;
    });
  }

 private:
  struct Connection {
    int client;
    int server;
    std::atomic<bool> held{false};
    bool kept_some = false;  // guarded by mutex_, like `finished`
    bool finished = false;
    std::thread thread;
    Connection(int client_fd, int server_fd) : client(client_fd), server(server_fd) {}
  };

  void accept_loop() {
    while (!stopping_) {
      pollfd waiting{listener_, POLLIN, 0};
      if (poll(&waiting, 1, 50) <= 0) continue;
      const int client = accept(listener_, nullptr, nullptr);
      if (client < 0) continue;
      std::lock_guard lock(mutex_);
      auto& connection = connections_.emplace_back(client, relay_detail::connect_to_loopback(server_port_));
      connection.thread = std::thread([this, &connection] { relay(connection); });
    }
  }

  void relay(Connection& connection) {
    std::string kept;
    bool client_open = true;
    bool server_told_end = false;
    char buffer[65536];
    while (!stopping_) {
      if (released_ && !kept.empty()) {
        relay_detail::send_all(connection.server, kept.data(), kept.size());
        kept.clear();
      }
      if (!client_open && kept.empty() && !server_told_end) {
        shutdown(connection.server, SHUT_WR);  // the server answers, then closes
        server_told_end = true;
      }
      pollfd ends[2] = {{client_open ? connection.client : -1, POLLIN, 0},
                        {connection.server, POLLIN, 0}};
      if (poll(ends, 2, 20) <= 0) continue;
      if (ends[0].revents != 0) {
        const ssize_t got = recv(connection.client, buffer, sizeof buffer, 0);
        if (got <= 0) {
          client_open = false;
        } else if (connection.held && !released_) {
          kept.append(buffer, static_cast<std::size_t>(got));
          std::lock_guard lock(mutex_);
          connection.kept_some = true;
        } else {
          relay_detail::send_all(connection.server, buffer, static_cast<std::size_t>(got));
        }
      }
      if (ends[1].revents != 0) {
        const ssize_t got = recv(connection.server, buffer, sizeof buffer, 0);
        if (got <= 0) break;
        if (client_open) relay_detail::send_all(connection.client, buffer, static_cast<std::size_t>(got));
      }
    }
    close(connection.client);
    close(connection.server);
    std::lock_guard lock(mutex_);
    connection.finished = true;
    changed_.notify_all();
  }

  int server_port_;
  int port_ = 0;
  int listener_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> released_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  std::list<Connection> connections_;  // stable addresses for the relay threads
  std::thread acceptor_;
};

}  // namespace avout::testing
