// Library messages go through ClientOptions::logger: a custom logger hears everything and
// nothing else reaches stderr; the default logger prints warnings and errors to stderr, one
// line each, and keeps a flood of one kind of message (the ZooKeeper client's retries while
// no server listens) to a few lines.
#include <avout/avout.hpp>
#include <avout/logger.hpp>
#include <avout/redis.hpp>

#include "support/faulty_store.hpp"
#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/logging-test", stem);
}

// A loopback port nothing listens on: connecting to it is refused at once.
int unused_port() {
  const int socket = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (::bind(socket, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(socket, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(socket);
    throw std::runtime_error("cannot find an unused port");
  }
  ::close(socket);
  return ntohs(address.sin_port);
}

// Tries for `how_long` to connect to a ZooKeeper that is not there.
void connect_to_nothing(avout::Logger logger, std::chrono::milliseconds how_long) {
  try {
    avout::Client client(avout::ClientOptions{.hosts = "127.0.0.1:" + std::to_string(unused_port()),
                                              .connect_timeout = how_long,
                                              .logger = std::move(logger)});
  } catch (const avout::ConnectionLoss&) {
    return;  // expected: no server
  }
  throw std::runtime_error("a client connected to a port where no server listens");
}

// Runs `body` in a child process whose stderr goes to a file; returns what it wrote there.
// Fails the test when the child fails (its error is in what it wrote).
std::string stderr_of_child(const std::function<void()>& body) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("avout-logging-test-" + std::to_string(::getpid()) + ".err");
  avout::testing::ChildProcess child(0, [&](int) {
    if (std::freopen(path.c_str(), "w", stderr) == nullptr) std::_Exit(3);
    body();
  });
  const int code = child.wait(scaled(60s));
  std::ifstream in(path);
  std::stringstream written;
  written << in.rdbuf();
  std::filesystem::remove(path);
  INFO("the child's stderr:\n" << written.str());
  REQUIRE(code == 0);
  return written.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A thread-safe record of what a logger heard.
class CapturedLog {
 public:
  avout::Logger logger() {
    return [this](avout::LogLevel level, std::string_view message) {
      std::lock_guard lock(mutex_);
      entries_.emplace_back(level, std::string(message));
      heard_.notify_all();
    };
  }
  // True when a message at `level` containing `text` arrives within `timeout`.
  bool heard(avout::LogLevel level, const std::string& text, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return heard_.wait_for(lock, timeout, [&] {
      for (const auto& [at, message] : entries_) {
        if (at == level && message.find(text) != std::string::npos) return true;
      }
      return false;
    });
  }
  std::string dump() {
    std::lock_guard lock(mutex_);
    std::string all;
    for (const auto& [level, message] : entries_) {
      all += std::string(avout::to_string(level)) + ": " + message + "\n";
    }
    return all;
  }

 private:
  std::mutex mutex_;
  std::condition_variable heard_;
  std::vector<std::pair<avout::LogLevel, std::string>> entries_;
};

}  // namespace

TEST_CASE(
    "with a logger set, the ZooKeeper client's retries while no server listens reach "
    "the logger and nothing reaches stderr") {
  const std::string written = stderr_of_child([] {
    CapturedLog log;
    connect_to_nothing(log.logger(), 3s);
    if (!log.heard(avout::LogLevel::error, "zookeeper client:", 0ms)) {
      throw std::runtime_error("the logger heard no connection error; it heard:\n" + log.dump());
    }
  });
  CHECK(written.empty());
}

TEST_CASE("without a logger, a client retrying a server that is down prints a few lines") {
  const std::string written = stderr_of_child([] { connect_to_nothing({}, 5s); });
  const auto lines = lines_of(written);
  INFO("stderr:\n" << written);
  CHECK(!lines.empty());
  CHECK(lines.size() <= 10);
  for (const auto& line : lines) CHECK(line.rfind("avout: ", 0) == 0);
}

TEST_CASE(
    "the default logger prints warnings and errors, drops the rest and keeps one kind "
    "of message to a few lines") {
  const std::string written = stderr_of_child([] {
    const auto logger = avout::default_logger();
    logger(avout::LogLevel::info, "an info line");
    logger(avout::LogLevel::debug, "a debug line");
    for (int i = 0; i < 100; ++i) {
      logger(avout::LogLevel::warning, "retrying server 10.0.0." + std::to_string(i));
    }
    logger(avout::LogLevel::error, "something else broke");
  });
  const auto lines = lines_of(written);
  INFO("stderr:\n" << written);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "avout: warning: retrying server 10.0.0.0");
  CHECK(lines[2] == "avout: warning: retrying server 10.0.0.2");
  CHECK(lines[3] == "avout: error: something else broke");
}

TEST_CASE("a watch callback that throws is reported through the client's logger") {
  auto& zookeeper = avout::testing::shared_zookeeper();
  CapturedLog log;
  avout::Client client(
      avout::ClientOptions{.hosts = zookeeper.connect_string(), .logger = log.logger()});
  auto atom = client.atom<long>(unique_name("throwing-watch"), 0);
  atom.add_watch("thrower",
                 [](const long&, const long&) { throw std::runtime_error("boom from a watch"); });
  atom.reset(1);
  CHECK_MESSAGE(log.heard(avout::LogLevel::error, "boom from a watch", scaled(10s)), log.dump());
}

TEST_CASE("a session callback that throws is reported through the session's logger") {
  auto& zookeeper = avout::testing::shared_zookeeper();
  CapturedLog log;
  avout::ZooKeeperSession session(
      avout::SessionOptions{.hosts = zookeeper.connect_string(), .logger = log.logger()});
  const std::string path = unique_name("throwing-session-watch");
  session.create_recursive(path.substr(0, path.rfind('/')));
  auto watching = session.watch_persistently(path, [](const avout::WatchEvent&) {
    throw std::runtime_error("boom from a session watch");
  });
  session.create(path, {});
  CHECK_MESSAGE(log.heard(avout::LogLevel::error, "boom from a session watch", scaled(10s)),
                log.dump());
}

TEST_CASE(
    "an agent action held up by its store is reported as a warning through the client's "
    "logger, and runs once the store is back") {
  auto& zookeeper = avout::testing::shared_zookeeper();
  CapturedLog log;
  avout::Client client(
      avout::ClientOptions{.hosts = zookeeper.connect_string(), .logger = log.logger()});
  // Values outside ZooKeeper: a ZooKeeper-held value is created by the batch's multi itself.
  avout::redis::Store redis(avout::testing::shared_redis().url());
  avout::testing::FaultyStore store(redis, 1, {.fail_early = 1.0});
  store.enable(false);
  auto agent = client.agent<long>(unique_name("delayed-agent"), 0, store);
  store.enable(true);
  agent.send([](long value) { return value + 1; });
  CHECK_MESSAGE(log.heard(avout::LogLevel::warning, "an action is delayed", scaled(10s)),
                log.dump());
  store.enable(false);
  agent.await(scaled(20s));
  CHECK(agent.deref() == 1);
}
