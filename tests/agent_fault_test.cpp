// Agents under faults: a send whose reply is lost, and stores restarted while actions are
// queued. An outage delays actions; it never loses or doubles one.
#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>
#include <avout/zookeeper_session.hpp>

#include "support/servers.hpp"
#include "support/tcp_relay.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <future>
#include <optional>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/agent-fault-test", stem);
}

avout::ClientOptions options(const std::string& hosts) {
  return avout::ClientOptions{.hosts = hosts, .session_timeout = 4000ms};
}

using Log = std::vector<long>;

Log append(Log log, long value) {
  log.push_back(value);
  return log;
}

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

// A named send of `sender` (through `relay`) lands while the relay drops ZooKeeper's replies
// to it, and `runner` (another client that defined the name) runs it and deletes its node
// before the sender can look for it, unless the sender found it first. What the sender's send
// then said: "returned" (the action must run exactly once), "Timeout" (it must never run) or
// "OutcomeUnknown" (once or never), and how many times it ran.
struct HiddenSend {
  std::string outcome;
  long runs = 0;
};

HiddenSend named_send_run_by_another_while_its_reply_is_lost(
    std::optional<std::chrono::milliseconds> deadline) {
  auto& zookeeper = avout::testing::shared_zookeeper();
  avout::testing::TcpRelay relay(zookeeper.port());
  const std::string name = unique_name("hidden-named-send");
  // A long session: the sender's client does not give up on the silent link by itself.
  avout::Client sender({.hosts = relay.connect_string(), .session_timeout = 12000ms});
  avout::Client runner(options(zookeeper.connect_string()));
  avout::ZooKeeperSession observer(
      avout::SessionOptions{.hosts = zookeeper.connect_string(), .session_timeout = 4000ms});
  auto sending = sender.agent<Log>(name, {});
  auto running = runner.agent<Log>(name, {});
  for (auto* agent : {&sending, &running}) agent->define("append", append);
  const std::string queue = avout::inspect::agent_queue_path(sender, name);
  const std::string head = avout::inspect::agent_head_path(sender, name);
  // The runner holds the queue's front; the batch it planned holds only this action.
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  struct Release {  // even when the test fails: the runner's client must be able to stop
    std::atomic<bool>& release;
    ~Release() { release = true; }
  } release_at_exit{release};
  running.send_off([&](Log log) {
    started = true;
    while (!release) std::this_thread::sleep_for(5ms);
    return log;
  });
  const auto until = std::chrono::steady_clock::now() + scaled(10s);
  while (!started && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
  REQUIRE(started);
  // A send behind it reads the head: the send below finds it cached (one create).
  sending.send_off("append", 5L);

  relay.lose_replies();
  auto sent = std::async(std::launch::async, [&]() -> std::string {
    try {
      if (deadline) {
        sending.send_off(avout::Deadline::after(*deadline), "append", 1L);
      } else {
        sending.send_off("append", 1L);
      }
      return "returned";
    } catch (const avout::OutcomeUnknown&) {
      return "OutcomeUnknown";
    } catch (const avout::Timeout&) {
      return "Timeout";
    }
  });
  while (observer.children(queue).size() < 3 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(5ms);
  }
  REQUIRE(observer.children(queue).size() == 3);  // the runner's, then the sender's two
  // Moving the head (same bytes, new version) fails the runner's planned batch: it lists the
  // queue again and runs the sender's named sends in its next batch.
  const auto node = observer.get(head);
  (void)observer.set(head, node.data, node.stat.version);
  release = true;
  while (!observer.children(queue).empty() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(5ms);
  }
  REQUIRE(observer.children(queue).empty());
  relay.cut();  // the sender reconnects and looks for its node
  HiddenSend result;
  result.outcome = sent.get();
  // Once it ran, every earlier send node is settled. A closure: a named send made while the
  // sender reconnects may itself end in OutcomeUnknown (its head read before the runner's
  // batch, the create lost with the old connection).
  sending.send_off(append, 2L);
  REQUIRE(sending.await_for(scaled(30s)));
  REQUIRE(running.await_for(scaled(30s)));
  const Log log = sending.deref();
  result.runs = std::count(log.begin(), log.end(), 1L);
  CHECK(log.back() == 2);
  return result;
}

}  // namespace

TEST_CASE("a send whose reply was lost is found again: it runs once and blocks nobody") {
  auto& zookeeper = avout::testing::shared_zookeeper();
  avout::testing::TcpRelay relay(zookeeper.port());
  const std::string name = unique_name("lost-reply");
  avout::Client client(options(relay.connect_string()));
  auto agent = client.agent<Log>(name, {});
  avout::ZooKeeperSession observer(
      avout::SessionOptions{.hosts = zookeeper.connect_string(), .session_timeout = 4000ms});
  const std::string queue = avout::inspect::agent_queue_path(client, name);
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
  avout::testing::TcpRelay relay(zookeeper.port());
  const std::string name = unique_name("lost-commit-reply");
  avout::Client client(options(relay.connect_string()));
  auto agent = client.agent<Log>(name, {});
  avout::ZooKeeperSession observer(
      avout::SessionOptions{.hosts = zookeeper.connect_string(), .session_timeout = 4000ms});
  const std::string queue = avout::inspect::agent_queue_path(client, name);
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
  outage_delays_actions(
      redis, [&] { redis_server.stop(); }, [&] { redis_server.start(); });
}

TEST_CASE("an agent's actions wait out a PostgreSQL restart: none is lost, await waits for them") {
  avout::testing::PostgresServer postgres_server;
  avout::postgres::Store postgres(postgres_server.url());
  outage_delays_actions(
      postgres, [&] { postgres_server.stop(); }, [&] { postgres_server.start(); });
}

TEST_CASE("a send that vanished with an expired session makes await throw, not succeed") {
  auto& zookeeper = avout::testing::shared_zookeeper();
  avout::testing::TcpRelay relay(zookeeper.port());
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

TEST_CASE(
    "a named send whose deadline passed after its create went out never says Timeout: "
    "another process may run it (OutcomeUnknown)") {
  // The create goes out at once (the head is cached) and its reply never comes back in time.
  const auto sent = named_send_run_by_another_while_its_reply_is_lost(30ms);
  CAPTURE(sent.outcome);
  CHECK(sent.runs == (sent.outcome == "Timeout" ? 0 : 1));
  CHECK(sent.outcome != "returned");
}

TEST_CASE(
    "a named send whose create reply was lost and whose node another process ran "
    "meanwhile is not sent again: it ran once, and the send said so or OutcomeUnknown") {
  const auto sent = named_send_run_by_another_while_its_reply_is_lost(std::nullopt);
  CAPTURE(sent.outcome);
  CHECK(sent.runs == 1);
  CHECK(sent.outcome != "Timeout");
}

namespace {

// Stores values in another store; the first erase after arm() (a batch's replaced value,
// erased right after its commit and before the sends its actions made go out) runs a hook.
class ErasingHookStore : public avout::Store {
 public:
  ErasingHookStore(avout::Store& inner, std::function<void()> hook)
      : inner_(inner), hook_(std::move(hook)) {}
  void arm() { armed_ = true; }
  std::string description() const override { return "hooked " + inner_.description(); }
  avout::StoreIdentity identity() const override { return inner_.identity(); }
  std::size_t max_value_size() const override { return inner_.max_value_size(); }
  std::unique_ptr<avout::AtomState> atom_state(const std::string& name) override {
    return inner_.atom_state(name);
  }
  std::unique_ptr<avout::ReferenceData> reference_data(const std::string& name) override {
    return std::make_unique<Data>(*this, inner_.reference_data(name));
  }

 private:
  class Data : public avout::ReferenceData {
   public:
    Data(ErasingHookStore& store, std::unique_ptr<avout::ReferenceData> inner)
        : store_(store), inner_(std::move(inner)) {}
    std::string name() const override { return inner_->name(); }
    void set(avout::Bytes value, const avout::Point& point) override {
      inner_->set(std::move(value), point);
    }
    avout::Bytes get(const avout::Point& point) override { return inner_->get(point); }
    void erase(const avout::Point& point) override {
      inner_->erase(point);
      if (store_.armed_.exchange(false)) store_.hook_();
    }
    std::vector<avout::Point> points() override { return inner_->points(); }

   private:
    ErasingHookStore& store_;
    std::unique_ptr<avout::ReferenceData> inner_;
  };

  avout::Store& inner_;
  std::function<void()> hook_;
  std::atomic<bool> armed_{false};
};

}  // namespace

TEST_CASE(
    "a send made by an action whose create fails after the action committed is made "
    "once ZooKeeper is back, not dropped") {
  auto& zookeeper = avout::testing::shared_zookeeper();
  avout::testing::TcpRelay relay(zookeeper.port());
  avout::redis::Store redis(avout::testing::shared_redis().url());
  // From the erase right after the action's commit on, ZooKeeper is out of reach.
  ErasingHookStore store(redis, [&] { relay.isolate(); });
  avout::Client client({.hosts = relay.connect_string(), .session_timeout = 1000ms});
  auto agent = client.agent<Log>(unique_name("later-send"), {}, store);
  agent.send(append, 0);
  REQUIRE(agent.await_for(scaled(30s)));
  agent.send([&agent, &store](Log log) {
    log.push_back(1);
    agent.send(append, 2);  // goes out after this action's value is stored
    store.arm();
    return log;
  });
  // Longer than the send's own resolution of its create (three session timeouts, twice).
  std::this_thread::sleep_for(9s);
  relay.cut();
  const auto deadline = std::chrono::steady_clock::now() + scaled(30s);
  Log seen;
  while (seen.size() < 3 && std::chrono::steady_clock::now() < deadline) {
    try {
      seen = agent.deref();
    } catch (const avout::SessionExpired&) {
      // reported once: the client goes on with a new session
    } catch (const avout::ConnectionLoss&) {
      // still reconnecting
    }
    std::this_thread::sleep_for(50ms);
  }
  CHECK(seen == Log{0, 1, 2});
  CHECK_FALSE(agent.error());
  CHECK(agent.await_for(scaled(30s)));
}
