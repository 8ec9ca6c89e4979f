#pragma once
// A TCP relay for fault tests: sits between clients and a real server on loopback and, on
// demand, misbehaves like a network: drops the server's replies (a request that landed but
// whose answer never came), drops everything (a silent partition), refuses connections,
// holds back what clients send and delivers it later (a delayed request), or cuts the open
// connections (the client sees ConnectionLoss and reconnects).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <list>
#include <mutex>
#include <string>
#include <thread>

namespace avout::testing {

/// Forwards 127.0.0.1:<port> to 127.0.0.1:<server port>, one thread per connection.
class TcpRelay {
 public:
  /// What every connection, open or later, lets through.
  enum class Mode { pass, drop_replies, drop_all, refuse };

  /// Listens on a free loopback port and relays to 127.0.0.1:`server_port`.
  explicit TcpRelay(int server_port);
  ~TcpRelay();
  TcpRelay(const TcpRelay&) = delete;
  TcpRelay& operator=(const TcpRelay&) = delete;

  /// "tcp://127.0.0.1:<port>", for a Redis store.
  std::string url() const;
  /// "127.0.0.1:<port>", for a ZooKeeper client.
  std::string connect_string() const;

  /// Sets what every connection lets through from now on (refuse: new ones are closed).
  void set(Mode mode);
  /// The connections open now drop the server's bytes from now on; later ones do not.
  void lose_replies();
  /// Open and later connections drop both sides' bytes, until cut().
  void isolate();
  /// Closes every open connection and ends isolate(); later ones relay as the mode says.
  void cut();

  /// The connections open now keep what their clients send from now on.
  void hold();
  /// Sends everything kept to the server (also after its client closed), and lets later
  /// bytes through.
  void release();
  /// True once the server answered and closed every connection that kept bytes.
  bool delivered(std::chrono::milliseconds timeout);
  /// True once a connection keeps, of what its client sent since hold(), bytes holding
  /// `needle` (say a node's path: that request went out without waiting for any reply).
  bool keeps(const std::string& needle, std::chrono::milliseconds timeout);

 private:
  struct Connection {
    int client = -1;
    int server = -1;
    std::atomic<bool> drop_replies{false};
    std::atomic<bool> drop_requests{false};
    std::atomic<bool> held{false};
    bool kept_some = false;  // guarded by mutex_, like `finished` and `kept`
    std::string kept;        // what the client sent while held, until released
    bool finished = false;
    std::thread thread;
  };

  void accept_loop();
  void relay(Connection& connection);

  int server_port_;
  int port_ = 0;
  int listener_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> released_{false};
  std::atomic<Mode> mode_{Mode::pass};
  std::mutex mutex_;
  std::condition_variable changed_;
  bool isolated_ = false;              // guarded by mutex_
  std::list<Connection> connections_;  // stable addresses for the relay threads
  std::thread acceptor_;
};

}  // namespace avout::testing
