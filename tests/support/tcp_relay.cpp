#include "support/tcp_relay.hpp"

#include "support/servers.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace avout::testing {
namespace {

// -1 when the server cannot be reached.
int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = loopback_address(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// False once the peer is gone (what it would have got is dropped).
bool send_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t sent = ::send(fd, data, size, MSG_NOSIGNAL);
    if (sent <= 0) return false;
    data += sent;
    size -= static_cast<std::size_t>(sent);
  }
  return true;
}

}  // namespace

TcpRelay::TcpRelay(int server_port) : server_port_(server_port) {
  listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
  const int yes = 1;
  ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in address = loopback_address(0);
  socklen_t length = sizeof address;
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener_, 16) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(listener_);
    throw std::runtime_error("relay: cannot listen on loopback");
  }
  port_ = ntohs(address.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

TcpRelay::~TcpRelay() {
  stopping_ = true;
  acceptor_.join();
  for (auto& connection : connections_) connection.thread.join();
  ::close(listener_);
}

std::string TcpRelay::url() const { return "tcp://127.0.0.1:" + std::to_string(port_); }
std::string TcpRelay::connect_string() const { return "127.0.0.1:" + std::to_string(port_); }

void TcpRelay::set(Mode mode) { mode_ = mode; }

void TcpRelay::lose_replies() {
  std::lock_guard lock(mutex_);
  for (auto& connection : connections_) connection.drop_replies = true;
}

void TcpRelay::isolate() {
  std::lock_guard lock(mutex_);
  isolated_ = true;
  for (auto& connection : connections_) connection.drop_replies = connection.drop_requests = true;
}

void TcpRelay::cut() {
  std::lock_guard lock(mutex_);
  isolated_ = false;
  for (auto& connection : connections_) {
    if (connection.finished) continue;  // its descriptors are closed, perhaps reused
    ::shutdown(connection.client, SHUT_RDWR);
    ::shutdown(connection.server, SHUT_RDWR);
  }
}

void TcpRelay::hold() {
  std::lock_guard lock(mutex_);
  for (auto& connection : connections_) connection.held = true;
}

void TcpRelay::release() { released_ = true; }

bool TcpRelay::delivered(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] {
    for (const auto& connection : connections_) {
      if (connection.kept_some && !connection.finished) return false;
    }
    return true;
  });
}

bool TcpRelay::keeps(const std::string& needle, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] {
    for (const auto& connection : connections_) {
      if (connection.kept.find(needle) != std::string::npos) return true;
    }
    return false;
  });
}

void TcpRelay::accept_loop() {
  while (!stopping_) {
    pollfd waiting{listener_, POLLIN, 0};
    if (::poll(&waiting, 1, 20) <= 0) continue;
    const int client = ::accept(listener_, nullptr, nullptr);
    if (client < 0) continue;
    const int server = mode_ == Mode::refuse ? -1 : connect_to(server_port_);
    if (server < 0) {
      ::close(client);
      continue;
    }
    std::lock_guard lock(mutex_);
    auto& connection = connections_.emplace_back();
    connection.client = client;
    connection.server = server;
    connection.drop_replies = connection.drop_requests = isolated_;
    connection.thread = std::thread([this, &connection] { relay(connection); });
  }
}

void TcpRelay::relay(Connection& connection) {
  std::string kept;
  bool client_open = true;
  bool server_told_end = false;
  char buffer[65536];
  // Sends what was kept while held; false when the server is gone.
  auto send_kept = [&] {
    if (kept.empty()) return true;
    const bool sent = send_all(connection.server, kept.data(), kept.size());
    kept.clear();
    std::lock_guard lock(mutex_);
    connection.kept.clear();
    return sent;
  };
  while (!stopping_) {
    if (released_) send_kept();
    if (!client_open && kept.empty() && !server_told_end) {
      ::shutdown(connection.server, SHUT_WR);  // the server answers, then closes
      server_told_end = true;
    }
    pollfd ends[2] = {{client_open ? connection.client : -1, POLLIN, 0},
                      {connection.server, POLLIN, 0}};
    if (::poll(ends, 2, 20) <= 0) continue;
    if (ends[0].revents != 0) {
      const ssize_t got = ::recv(connection.client, buffer, sizeof buffer, 0);
      const Mode mode = mode_;
      if (got <= 0) {
        client_open = false;
      } else if (mode == Mode::drop_all || connection.drop_requests) {
        // dropped on the wire
      } else if (connection.held && !released_) {
        kept.append(buffer, static_cast<std::size_t>(got));
        std::lock_guard lock(mutex_);
        connection.kept_some = true;
        connection.kept.append(buffer, static_cast<std::size_t>(got));
        changed_.notify_all();
      } else {
        // Released since the loop's top: what was kept goes first, or the server would get
        // later requests before earlier ones (the client then sees replies out of order).
        if (!send_kept() || !send_all(connection.server, buffer, static_cast<std::size_t>(got)))
          break;
      }
    }
    if (ends[1].revents != 0) {
      const ssize_t got = ::recv(connection.server, buffer, sizeof buffer, 0);
      if (got <= 0) break;
      const Mode mode = mode_;
      const bool drop =
          mode == Mode::drop_all || mode == Mode::drop_replies || connection.drop_replies;
      if (client_open && !drop &&
          !send_all(connection.client, buffer, static_cast<std::size_t>(got)))
        break;
    }
  }
  std::lock_guard lock(mutex_);
  ::close(connection.client);
  ::close(connection.server);
  connection.finished = true;
  changed_.notify_all();
}

}  // namespace avout::testing
