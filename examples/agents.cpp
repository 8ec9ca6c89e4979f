// Agents: a value changed by actions sent to it. Actions run one at a time, later, in the
// order the sends were made across all processes, each on a worker of the sending process.
//
// Shows send, send_off (for blocking work), await, a failing action (error and restart), and
// a send inside dosync, which goes out only if (and once) the transaction commits. Every
// step checks its result.
//
//   AVOUT_ZOOKEEPER=127.0.0.1:2181 AVOUT_REDIS=redis://127.0.0.1:6379 ./avout_example_agents
//
// Exit codes: 0 all as expected, 1 a wrong result or an error, 2 usage.
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

using Log = std::vector<long>;

// The value of environment variable `name`, or "" when it is not set.
std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// Stops the program with exit code 1 when a result is not what the example expects.
void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::cerr << "agents: WRONG RESULT: " << what << "\n";
    std::exit(1);
  }
  std::cout << "  ok: " << what << "\n";
}

// An action: takes the agent's value (and the send's arguments), returns the next value.
Log append(Log log, long entry) {
  log.push_back(entry);
  return log;
}

std::string show(const Log& log) {
  std::string text = "[";
  for (std::size_t i = 0; i < log.size(); ++i) text += (i ? ", " : "") + std::to_string(log[i]);
  return text + "]";
}

}  // namespace

int main() {
  const std::string zookeeper = env("AVOUT_ZOOKEEPER");
  const std::string redis_url = env("AVOUT_REDIS");
  if (zookeeper.empty() || redis_url.empty()) {
    std::cerr
        << "usage: AVOUT_ZOOKEEPER=host:port AVOUT_REDIS=redis://host:port avout_example_agents\n"
           "  AVOUT_ZOOKEEPER  ZooKeeper connect string (coordination and the send queues)\n"
           "  AVOUT_REDIS      Redis URL, redis://[[user]:password@]host:port[/db] (the log "
           "agent's value)\n";
    return 2;
  }
  // Fresh names for every run, so the initial values below are the ones used.
  const std::string run = "/examples/agents-" + std::to_string(std::random_device{}());

  try {
    avout::Client client(zookeeper);
    avout::redis::Store redis(redis_url);

    // An agent whose value (a list) lives in Redis; its send queue is in ZooKeeper.
    auto log = client.agent<Log>(run + "/log", {}, redis);
    std::cout << "agent " << log.name() << " (value in Redis)\n";

    // send: returns once the action's place in the global order is fixed; it runs later.
    std::cout << "send 1, 2, 3; send_off a slow action appending 4; send 5\n";
    for (long i = 1; i <= 3; ++i) log.send(append, i);
    // send_off: for actions that block (I/O, sleeping); they run on a pool that grows.
    log.send_off([](Log value) {
      std::this_thread::sleep_for(50ms);
      return append(std::move(value), 4);
    });
    log.send(append, 5);
    // await: every action this process sent so far has run.
    log.await(30s);
    std::cout << "  log = " << show(log.deref()) << "\n";
    expect(log.deref() == Log{1, 2, 3, 4, 5}, "actions ran once each, in send order");

    // An action that throws fails the agent, for every process: its value stays, later
    // sends throw AgentFailed, until someone restarts it with a new value.
    auto count = client.agent<long>(run + "/count", 0);  // value in ZooKeeper
    std::cout << "agent " << count.name() << ": add 1, then an action that throws\n";
    count.send([](long value) { return value + 1; });
    count.send([](long) -> long { throw std::runtime_error("out of paper"); });
    count.await(30s);
    const auto error = count.error();
    expect(error.has_value() && error->find("out of paper") != std::string::npos,
           "the agent failed: " + error.value_or("(no error)"));
    expect(count.deref() == 1, "the failed action stored nothing: count is 1");
    bool refused = false;
    try {
      count.send([](long value) { return value + 1; });
    } catch (const avout::AgentFailed&) {
      refused = true;
    }
    expect(refused, "a send to the failed agent throws AgentFailed");
    std::cout << "restart with 100, then add 1\n";
    count.restart(100);
    expect(!count.error(), "the error is cleared");
    count.send([](long value) { return value + 1; });
    count.await(30s);
    expect(count.deref() == 101, "count is 101");

    // A send inside dosync goes out with the commit: once, even if the body ran several
    // times, and not at all if the transaction aborts.
    auto balance = client.ref<long>(run + "/balance", 0);
    std::cout << "dosync: balance += 10 and send 6; an aborted dosync sending 99\n";
    client.dosync([&] {
      balance.alter([](long value) { return value + 10; });
      log.send(append, 6);
    });
    try {
      client.dosync([&] {
        log.send(append, 99);
        throw std::runtime_error("changed my mind");  // aborts: nothing commits, nothing sent
      });
    } catch (const std::runtime_error&) {
    }
    log.await(30s);
    std::cout << "  log = " << show(log.deref()) << "\n";
    expect(balance.deref() == 10, "balance is 10");
    expect(log.deref() == Log{1, 2, 3, 4, 5, 6}, "6 was sent once, 99 never");

    std::cout << "agents: all results as expected\n";
    return 0;
  } catch (const avout::Error& error) {
    std::cerr << "agents: " << error.what() << "\n";
    return 1;
  }
}
