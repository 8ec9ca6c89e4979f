// Agents against real servers: actions run one at a time in send order across processes,
// await, errors and restart, sends held by transactions and actions, killed senders.
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/agent-test", stem);
}

void start_servers() {
  (void)avout::testing::shared_zookeeper();
  (void)avout::testing::shared_redis();
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 2000ms};
}

using Log = std::vector<long>;

Log append(Log log, long value) {
  log.push_back(value);
  return log;
}

// CLOCK_MONOTONIC is one clock for every process of this machine.
std::int64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

}  // namespace

TEST_CASE("4 processes x 250 sends: every action runs once, in send order") {
  start_servers();
  const std::string name = unique_name("order");
  constexpr int processes = 4;
  constexpr int sends = 250;
  const auto directory =
      std::filesystem::temp_directory_path() / ("avout-agent-" + name.substr(name.rfind('-') + 1));
  std::filesystem::create_directories(directory);
  {
    avout::Client setup(options());
    avout::redis::Store redis(avout::testing::shared_redis().url());
    (void)setup.agent<Log>(name, {}, redis);
  }
  const auto codes = avout::testing::run_in_processes(
      processes,
      [&](int index) {
        avout::Client client(options());
        avout::redis::Store redis(avout::testing::shared_redis().url());
        auto agent = client.agent<Log>(name, {}, redis);
        std::ofstream times(directory / std::to_string(index));
        for (int i = 0; i < sends; ++i) {
          const long id = index * 1000 + i;
          const auto before = monotonic_ns();
          agent.send(append, id);
          times << id << ' ' << before << ' ' << monotonic_ns() << '\n';
        }
        agent.await(scaled(120s));
        const auto seen = agent.deref();
        // After await every own send has run.
        for (int i = 0; i < sends; ++i) {
          if (std::find(seen.begin(), seen.end(), index * 1000 + i) == seen.end()) {
            throw std::runtime_error("own send missing after await");
          }
        }
      },
      scaled(240s));
  REQUIRE(codes == std::vector<int>(processes, 0));

  avout::Client client(options());
  avout::redis::Store redis(avout::testing::shared_redis().url());
  const Log log = client.agent<Log>(name, {}, redis).deref();
  REQUIRE(log.size() == static_cast<std::size_t>(processes * sends));
  std::map<long, std::size_t> position;
  for (std::size_t i = 0; i < log.size(); ++i) position[log[i]] = i;
  CHECK(position.size() == log.size());  // each action ran exactly once
  for (int p = 0; p < processes; ++p) {
    for (int i = 1; i < sends; ++i) {
      CHECK(position.at(p * 1000 + i - 1) < position.at(p * 1000 + i));  // own order kept
    }
  }
  // Global order: a send that returned before another began ran first.
  struct Timed {
    long id;
    std::int64_t begin, end;
  };
  std::vector<Timed> timed;
  for (int p = 0; p < processes; ++p) {
    std::ifstream in(directory / std::to_string(p));
    Timed t{};
    while (in >> t.id >> t.begin >> t.end) timed.push_back(t);
  }
  std::filesystem::remove_all(directory);
  REQUIRE(timed.size() == log.size());
  std::sort(timed.begin(), timed.end(),
            [](const Timed& a, const Timed& b) { return a.begin < b.begin; });
  std::size_t out_of_order = 0;
  std::int64_t latest_end = 0;
  long latest_id = -1;
  for (const auto& t : timed) {
    if (latest_id >= 0 && latest_end < t.begin && position.at(latest_id) > position.at(t.id)) {
      ++out_of_order;
    }
    if (t.end > latest_end) {
      latest_end = t.end;
      latest_id = t.id;
    }
  }
  CHECK(out_of_order == 0);
}

TEST_CASE("await, errors, restart and validators") {
  start_servers();
  avout::Client client(options());
  auto agent = client.agent<long>(unique_name("errors"), 0);
  agent.send([](long v, long d) { return v + d; }, 5);
  agent.send_off([](long v) {
    std::this_thread::sleep_for(50ms);  // a blocking action on the growing pool
    return v * 2;
  });
  agent.await(scaled(30s));
  CHECK(agent.deref() == 10);
  CHECK_FALSE(agent.error());

  // Await inside a transaction or an action is refused.
  auto ref = client.ref<long>(unique_name("errors-ref"), 0);
  CHECK_THROWS_AS(client.dosync([&] { agent.await(); }), avout::Error);
  agent.send([&agent](long v) {
    agent.await();  // throws: the action fails, and with it the agent
    return v;
  });
  agent.await_for(scaled(30s));
  REQUIRE(agent.error());
  CHECK(agent.error()->find("await") != std::string::npos);
  CHECK_THROWS_AS(agent.send([](long v) { return v + 1; }), avout::AgentFailed);
  CHECK(agent.deref() == 10);  // a failed action stores nothing

  agent.restart(100);
  CHECK_FALSE(agent.error());
  CHECK_THROWS_AS(agent.restart(1), avout::Error);  // not failed any more
  agent.send([](long v) { return v + 1; });
  agent.await(scaled(30s));
  CHECK(agent.deref() == 101);

  // A validator that rejects the result fails the agent the same way.
  agent.set_validator([](const long& v) { return v < 1000; });
  agent.send([](long v) { return v + 5000; });
  agent.await(scaled(30s));
  REQUIRE(agent.error());
  CHECK(agent.deref() == 101);
  agent.set_validator({});
  agent.restart(0);
  CHECK_THROWS_AS(agent.set_validator([](const long& v) { return v > 0; }), avout::ValidationError);
}

TEST_CASE("sends inside an action go out after its value is stored") {
  start_servers();
  avout::Client client(options());
  auto agent = client.agent<Log>(unique_name("nested"), {});
  agent.send([&agent](Log log) {
    log.push_back(1);
    agent.send([](Log later) {
      later.push_back(later.size() == 1 && later.front() == 1 ? 2 : -2);  // sees the stored 1
      return later;
    });
    return log;
  });
  // The nested send counts once it is made; wait until both ran.
  const auto deadline = std::chrono::steady_clock::now() + scaled(30s);
  while (agent.deref().size() < 2 && std::chrono::steady_clock::now() < deadline) {
    agent.await_for(100ms);
  }
  CHECK(agent.deref() == Log{1, 2});
}

TEST_CASE("sends inside dosync go out once, and only when the transaction commits") {
  start_servers();
  const std::string agent_name = unique_name("in-dosync");
  const std::string ref_name = unique_name("in-dosync-ref");
  {
    avout::Client setup(options());
    (void)setup.agent<Log>(agent_name, {});
    (void)setup.ref<long>(ref_name, 0);
  }
  const auto codes = avout::testing::run_in_processes(
      3,
      [&](int index) {
        avout::Client client(options());
        auto agent = client.agent<Log>(agent_name, {});
        auto counter = client.ref<long>(ref_name, 0);
        for (int i = 0; i < 20; ++i) {
          client.dosync([&] {
            counter.alter([](long v) { return v + 1; });  // contended: attempts retry
            agent.send(append, index * 1000 + i);
          });
        }
        // An aborted transaction sends nothing.
        try {
          client.dosync([&] {
            agent.send(append, -1);
            throw std::runtime_error("abort");
          });
        } catch (const std::runtime_error&) {
        }
        agent.await(scaled(60s));
      },
      scaled(120s));
  REQUIRE(codes == std::vector<int>(3, 0));
  avout::Client client(options());
  const Log log = client.agent<Log>(agent_name, {}).deref();
  CHECK(log.size() == 60);
  CHECK(client.ref<long>(ref_name, 0).deref() == 60);
  CHECK(std::find(log.begin(), log.end(), -1) == log.end());
}

TEST_CASE("a sender killed with SIGKILL loses only its own actions and blocks nobody") {
  start_servers();
  const std::string name = unique_name("killed");
  {
    avout::Client setup(options());
    (void)setup.agent<Log>(name, {});
  }
  avout::testing::StartSignal go;
  avout::testing::ChildProcess child(0, [&](int) {
    avout::Client client(options());
    auto agent = client.agent<Log>(name, {});
    agent.send_off([](Log log) {
      std::this_thread::sleep_for(60s);  // killed while its action holds the queue
      log.push_back(-1);
      return log;
    });
    agent.send(append, -2);
    go.release();
    std::this_thread::sleep_for(60s);
  });
  go.wait();
  std::this_thread::sleep_for(300ms);  // the child's action is running now
  child.signal(SIGKILL);
  (void)child.wait(scaled(10s));

  avout::Client client(options());
  auto agent = client.agent<Log>(name, {});
  agent.send(append, 7);
  CHECK(agent.await_for(scaled(30s)));  // the dead session's sends vanish with it
  CHECK(agent.deref() == Log{7});
  CHECK_FALSE(agent.error());
}

TEST_CASE("sends made inside a failed action never go out") {
  start_servers();
  avout::Client client(options());
  auto failing = client.agent<long>(unique_name("failing"), 0);
  auto other = client.agent<Log>(unique_name("failing-other"), {});
  failing.send([&other](long) -> long {
    other.send(append, 1);
    throw std::runtime_error("the action fails after sending");
  });
  REQUIRE(failing.await_for(scaled(30s)));
  REQUIRE(failing.error());

  // The same when the validator refuses the action's value.
  failing.restart(0);
  failing.set_validator([](const long& v) { return v < 10; });
  failing.send([&other](long) {
    other.send(append, 2);
    return 100L;
  });
  REQUIRE(failing.await_for(scaled(30s)));
  REQUIRE(failing.error());

  // A send made afterwards goes out: any send that leaked would have come before it.
  other.send(append, 3);
  REQUIRE(other.await_for(scaled(30s)));
  CHECK(other.deref() == Log{3});
}

TEST_CASE("agent names nested inside each other both work, whichever is made first") {
  start_servers();
  avout::Client client(options());
  const std::string outer_first = unique_name("outer-first");
  const std::string inner_first = unique_name("inner-first");
  std::vector<avout::Agent<long>> agents;
  agents.push_back(client.agent<long>(outer_first, 1));
  agents.push_back(client.agent<long>(outer_first + "/y", 2));
  agents.push_back(client.agent<long>(inner_first + "/y", 3));
  agents.push_back(client.agent<long>(inner_first, 4));
  for (auto& agent : agents) agent.send([](long v) { return v * 10; });
  for (auto& agent : agents) REQUIRE(agent.await_for(scaled(30s)));
  for (std::size_t i = 0; i < agents.size(); ++i) {
    CHECK(agents[i].deref() == static_cast<long>(i + 1) * 10);
    CHECK_FALSE(agents[i].error());
  }
  // A second handle finds each agent as it is, not made anew.
  CHECK(client.agent<long>(inner_first, 0).deref() == 40);
  CHECK(client.agent<long>(outer_first, 0).deref() == 10);
}
