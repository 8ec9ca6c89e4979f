// Deadlines and cancellation (avout::Deadline): dosync, atom swaps, locks and agent sends give
// up with Timeout in time, name what gave up, and leave nothing behind (no claim, no request
// node, no send node).
#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/tcp_relay.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <stop_token>
#include <string>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;
using Clock = std::chrono::steady_clock;

namespace {

avout::testing::ZooKeeperServer& zookeeper() {
  static avout::testing::ZooKeeperServer server;
  return server;
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = zookeeper().connect_string(), .session_timeout = 4000ms};
}

// Runs `call`, which must throw Timeout; returns its message and checks that it came after
// `limit` and not much later.
template <typename Call>
std::string expect_timeout(std::chrono::milliseconds limit, Call call) {
  const auto started = Clock::now();
  std::string message;
  try {
    call();
    FAIL("no Timeout");
  } catch (const avout::Timeout& error) {
    message = error.what();
  }
  const auto took = Clock::now() - started;
  CHECK(took >= limit);
  CHECK(took < limit + scaled(2s));
  return message;
}

// The send nodes in the queue of the agent `name`, read by a client that reaches the server.
std::size_t send_nodes(avout::Client& observer, const std::string& name) {
  return observer.session().children(avout::inspect::agent_queue_path(observer, name)).size();
}

// Waits until the queue of the agent `name` holds `count` send nodes; false at `limit`.
bool queue_reaches(avout::Client& observer, const std::string& name, std::size_t count,
                   std::chrono::milliseconds limit) {
  const auto until = Clock::now() + limit;
  while (send_nodes(observer, name) != count) {
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// Makes the agent `name` and runs one action (+1) on it, then reads it: a round trip after
// which its head is cached, so a send is one create.
avout::Agent<long> agent_with_cached_head(avout::Client& client, const std::string& name) {
  auto agent = client.agent<long>(name, 0);
  agent.send([](long value) { return value + 1; });
  REQUIRE(agent.await_for(scaled(20s)));
  REQUIRE(agent.deref() == 1);
  return agent;
}

// The lock folder's request nodes (writers of a plain Lock).
std::size_t lock_nodes(avout::Client& client, const std::string& name) {
  return client.session().children(client.options().root + "/locks" + name + "/writers").size();
}

}  // namespace

TEST_CASE(
    "a dosync behind an older transaction's claim ends with Timeout in time and leaves no claim") {
  avout::Client older(options());
  avout::Client younger(options());
  avout::Client other(options());
  const std::string name = "/deadline-test/claimed";
  auto old_ref = older.ref<long>(name, 0);
  auto other_ref = other.ref<long>(name, 0);
  auto young_ref = younger.ref<long>(name, 0);

  // The older transaction loses three commits to `other`, so it claims the ref, and then
  // runs long while holding the claim: younger writers yield to it.
  std::promise<void> claimed;
  std::atomic<bool> finish{false};
  std::thread long_writer([&] {
    int attempt = 0;
    older.dosync([&] {
      old_ref.alter([](long value) { return value + 1; });
      if (++attempt <= 3) {
        std::thread([&] {
          other.dosync([&] { other_ref.alter([](long v) { return v + 10; }); });
        }).join();
        return;
      }
      if (attempt == 4) claimed.set_value();
      while (!finish) std::this_thread::sleep_for(10ms);
    });
  });
  REQUIRE(claimed.get_future().wait_for(scaled(20s)) == std::future_status::ready);

  const auto message = expect_timeout(500ms, [&] {
    younger.dosync(avout::Deadline::after(500ms),
                   [&] { young_ref.alter([](long value) { return value + 100; }); });
  });
  CHECK(message.find("dosync: deadline passed after") != std::string::npos);
  finish = true;
  long_writer.join();

  CHECK(younger.dosync([&] { return young_ref.deref(); }) == 31);  // nothing of the younger
  // Every claim has ended: the older one's by its commit, and the younger never left one.
  CHECK(younger.session().get(younger.options().root + "/stm/tags" + name).data.empty());
}

TEST_CASE(
    "Lock::lock with a deadline while another process holds the lock is Timeout and leaves no "
    "request node") {
  const std::string name = "/deadline-test/held";
  avout::testing::StartSignal done;
  avout::testing::ChildProcess holder(0, [&](int) {
    avout::Client client(options());
    auto lock = client.lock(name);
    lock.lock();
    client.session().create(client.options().root + "/deadline-test-held", {});
    done.wait();
    lock.unlock();
  });
  avout::Client client(options());
  const std::string flag = client.options().root + "/deadline-test-held";
  const auto until = Clock::now() + scaled(20s);
  while (!client.session().exists(flag) && Clock::now() < until) std::this_thread::sleep_for(20ms);
  REQUIRE(client.session().exists(flag));

  auto lock = client.lock(name);
  const auto message = expect_timeout(300ms, [&] { lock.lock(avout::Deadline::after(300ms)); });
  CHECK(message == "lock " + name + ": deadline passed");
  CHECK_FALSE(lock.is_held());
  CHECK(lock_nodes(client, name) == 1);  // the holder's only

  done.release();
  CHECK(holder.wait(scaled(20s)) == 0);
  lock.lock(avout::Deadline::after(scaled(10s)));  // free again: taken at once
  CHECK(lock.is_held());
  lock.unlock();
}

TEST_CASE("a stop request from another thread cancels a waiting Lock::lock at once") {
  avout::Client client(options());
  const std::string name = "/deadline-test/cancelled";
  auto lock = client.lock(name);
  lock.lock();  // this thread holds it: another thread waits in line
  std::stop_source stop;
  std::promise<std::string> outcome;
  std::thread waiter([&] {
    try {
      lock.lock(stop.get_token());
      lock.unlock();
      outcome.set_value("acquired");
    } catch (const avout::Timeout& error) {
      outcome.set_value(error.what());
    }
  });
  std::this_thread::sleep_for(300ms);
  const auto asked = Clock::now();
  stop.request_stop();
  auto result = outcome.get_future();
  REQUIRE(result.wait_for(scaled(5s)) == std::future_status::ready);
  CHECK(Clock::now() - asked < scaled(2s));
  CHECK(result.get() == "lock " + name + ": cancelled");
  waiter.join();
  CHECK(lock_nodes(client, name) == 1);  // ours only
  lock.unlock();
}

TEST_CASE("ClientOptions::operation_timeout bounds calls given no deadline, and must be positive") {
  CHECK_THROWS_AS(avout::Client(avout::ClientOptions{.hosts = zookeeper().connect_string(),
                                                     .operation_timeout = 0ms}),
                  avout::InvalidDuration);
  auto bounded = options();
  bounded.operation_timeout = 300ms;
  avout::Client client(bounded);
  const std::string name = "/deadline-test/default";
  auto lock = client.lock(name);
  lock.lock();
  std::string message;
  std::thread([&] { message = expect_timeout(300ms, [&] { lock.lock(); }); }).join();
  CHECK(message == "lock " + name + ": deadline passed");
  lock.unlock();
}

TEST_CASE("an atom swap under endless contention ends at its deadline and writes nothing") {
  avout::Client client(options());
  avout::Client rival(options());
  const std::string name = "/deadline-test/contended";
  auto atom = client.atom<long>(name, 0);
  auto rival_atom = rival.atom<long>(name, 0);
  int calls = 0;
  // Timeout between attempts; OutcomeUnknown when the deadline came with a compare-and-set in
  // flight (a loaded machine): that write expected a version the rival had already moved on,
  // so it cannot land either way.
  std::string message;
  const auto started = Clock::now();
  try {
    atom.swap(avout::Deadline::after(400ms), [&](long value) {
      ++calls;
      rival_atom.swap([](long v) { return v + 1; });  // always gets in first
      return value + 100;
    });
    FAIL("the swap returned");
  } catch (const avout::Timeout& error) {
    // Between attempts ("swap: deadline passed after N attempts"), or while a read waited.
    message = error.what();
    CHECK(message.rfind("atom " + name + ": ", 0) == 0);
    CHECK(message.find("deadline passed") != std::string::npos);
  } catch (const avout::OutcomeUnknown& error) {
    message = error.what();
    CHECK(message.find("atom " + name + ": the call's deadline passed with a write in flight") !=
          std::string::npos);
  }
  const auto took = Clock::now() - started;
  CHECK(took >= 400ms);
  CHECK(took < 400ms + scaled(2s));
  CHECK(calls > 1);
  CHECK(atom.deref() == calls);  // the rival's writes only
}

TEST_CASE("a PostgreSQL statement running past the URL's statement_timeout is Timeout") {
  const std::string url = avout::testing::shared_postgres().url();
  const std::string limited =
      url + (url.find('?') == std::string::npos ? "?" : "&") + "statement_timeout=300";
  CHECK_THROWS_AS(avout::postgres::Store(url + (url.find('?') == std::string::npos ? "?" : "&") +
                                         "statement_timeout=soon"),
                  avout::InvalidName);
  avout::postgres::Store store(
      avout::postgres::StoreOptions{.url = limited, .table_prefix = "deadline_"});
  auto cell = store.atom_state("/deadline-test/statement");
  (void)cell->get();  // connected, tables created
  // Another session locks the table for three seconds: reads wait behind it.
  std::thread locker([&] {
    const std::string command = "psql '" + url +
                                "' -q -c \"BEGIN; LOCK TABLE deadline_atoms IN "
                                "ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3); COMMIT;\" >/dev/null";
    CHECK(std::system(command.c_str()) == 0);
  });
  std::string message;
  const auto until = Clock::now() + scaled(3s);
  while (message.empty() && Clock::now() < until) {
    try {
      (void)cell->get();  // the lock is not taken yet
      std::this_thread::sleep_for(20ms);
    } catch (const avout::Timeout& error) {
      message = error.what();
    }
  }
  locker.join();
  CHECK(message.find("statement timeout (300 ms) passed") != std::string::npos);
  CHECK(message.find("postgres ") == 0);
}

TEST_CASE("Agent::await gives up at its deadline or on a stop request while an action runs") {
  avout::Client client(options());
  auto agent = client.agent<long>("/deadline-test/agent", 0);
  agent.send_off([](long value) {
    std::this_thread::sleep_for(1500ms);
    return value + 1;
  });
  const auto message = expect_timeout(200ms, [&] { agent.await(avout::Deadline::after(200ms)); });
  CHECK(message == "agent /deadline-test/agent: await: deadline passed");

  std::stop_source stop;
  std::thread canceller([&] {
    std::this_thread::sleep_for(200ms);
    stop.request_stop();
  });
  CHECK_THROWS_WITH_AS(agent.await(stop.get_token()),
                       "agent /deadline-test/agent: await: cancelled", avout::Timeout);
  canceller.join();
  agent.await(avout::Deadline::after(scaled(20s)));
  CHECK(agent.deref() == 1);
}

TEST_CASE("ClientOptions::operation_timeout bounds a plain Agent::await while an action runs") {
  auto bounded = options();
  bounded.operation_timeout = 300ms;
  avout::Client client(bounded);
  auto agent = client.agent<long>("/deadline-test/plain-await", 0);
  agent.send_off([](long value) {
    std::this_thread::sleep_for(2500ms);
    return value + 1;
  });
  const auto message = expect_timeout(300ms, [&] { agent.await(); });
  CHECK(message == "agent /deadline-test/plain-await: await: deadline passed");
  agent.await(avout::Deadline::after(scaled(20s)));
  CHECK(agent.deref() == 1);
}

TEST_CASE(
    "ClientOptions::operation_timeout bounds a plain Agent::send whose reply is lost, and removes "
    "its node") {
  avout::testing::TcpRelay relay(zookeeper().port());
  auto bounded = options();
  bounded.hosts = relay.connect_string();
  bounded.operation_timeout = 500ms;
  avout::Client client(bounded);
  avout::Client observer(options());
  const std::string name = "/deadline-test/agent-send-default";
  auto agent = agent_with_cached_head(client, name);

  relay.lose_replies();  // the create lands, its reply never comes
  const auto message =
      expect_timeout(500ms, [&] { agent.send([](long value) { return value + 10; }); });
  CHECK(message == "agent " + name + ": send: deadline passed");
  CHECK(send_nodes(observer, name) == 1);  // the create landed
  relay.cut();  // the link comes back on the same session: the node is found and removed
  CHECK(queue_reaches(observer, name, 0, scaled(15s)));
  agent.send([](long value) { return value + 100; });  // the queue is not blocked
  REQUIRE(agent.await_for(scaled(20s)));
  CHECK(agent.deref() == 101);
}

TEST_CASE("Agent::send with an expired deadline is Timeout and leaves no send node") {
  avout::Client client(options());
  const std::string name = "/deadline-test/agent-send-expired";
  auto agent = client.agent<long>(name, 0);
  const auto passed = avout::Deadline::at(Clock::now() - 1ms);
  CHECK_THROWS_WITH_AS(agent.send(passed, [](long value) { return value + 1; }),
                       ("agent " + name + ": send: deadline passed").c_str(), avout::Timeout);
  std::stop_source stop;
  stop.request_stop();
  CHECK_THROWS_WITH_AS(agent.send_off(stop.get_token(), [](long value) { return value + 1; }),
                       ("agent " + name + ": send: cancelled").c_str(), avout::Timeout);
  CHECK(send_nodes(client, name) == 0);
  agent.send(avout::Deadline::after(scaled(10s)), [](long value) { return value + 5; });
  REQUIRE(agent.await_for(scaled(20s)));
  CHECK(agent.deref() == 5);  // only the send that was made ran
}

TEST_CASE(
    "a stop request cancels an Agent::send held up by a ZooKeeper outage, and nothing of it stays "
    "queued") {
  avout::testing::TcpRelay relay(zookeeper().port());
  auto through_relay = options();
  through_relay.hosts = relay.connect_string();
  avout::Client client(through_relay);
  avout::Client observer(options());
  const std::string name = "/deadline-test/agent-send-outage";
  auto agent = agent_with_cached_head(client, name);

  relay.lose_replies();  // the create lands, its reply never comes
  std::stop_source stop;
  auto sent = std::async(std::launch::async, [&] {
    try {
      agent.send(stop.get_token(), [](long value) { return value + 10; });
      return std::string("sent");
    } catch (const avout::Timeout& error) {
      return std::string(error.what());
    }
  });
  REQUIRE(queue_reaches(observer, name, 1, scaled(5s)));  // the create landed
  const auto asked = Clock::now();
  stop.request_stop();
  REQUIRE(sent.wait_for(scaled(2s)) == std::future_status::ready);
  CHECK(Clock::now() - asked < scaled(1s));
  CHECK(sent.get() == "agent " + name + ": send: cancelled");

  relay.cut();  // the link comes back on the same session: the node is found and removed
  CHECK(queue_reaches(observer, name, 0, scaled(15s)));
  avout::Client other(options());  // nobody else is held up behind it either
  auto other_agent = other.agent<long>(name, 0);
  other_agent.send([](long value) { return value + 100; });
  REQUIRE(other_agent.await_for(scaled(20s)));
  CHECK(agent.deref() == 101);  // the cancelled action never ran
}

TEST_CASE(
    "a session or connect timeout that is zero or negative is InvalidDuration at once, for "
    "a Client and a bare session") {
  using Options = avout::ClientOptions;
  const std::string hosts = zookeeper().connect_string();
  const auto started = std::chrono::steady_clock::now();
  for (const auto bad : {0ms, -1ms, -10000ms}) {
    CAPTURE(bad.count());
    CHECK_THROWS_AS(avout::Client(Options{.hosts = hosts, .session_timeout = bad}),
                    avout::InvalidDuration);
    CHECK_THROWS_AS(avout::Client(Options{.hosts = hosts, .connect_timeout = bad}),
                    avout::InvalidDuration);
    CHECK_THROWS_AS(
        avout::ZooKeeperSession(avout::SessionOptions{.hosts = hosts, .session_timeout = bad}),
        avout::InvalidDuration);
  }
  // Before, each waited out the connect timeout (10 s) and threw ConnectionLoss.
  CHECK(std::chrono::steady_clock::now() - started < scaled(5s));
  avout::Client fine(Options{.hosts = hosts, .session_timeout = 1000ms, .connect_timeout = 5000ms});
  CHECK(fine.session().connected());
}

TEST_CASE(
    "a dosync whose Redis store stopped answering ends within one command timeout of its "
    "deadline, and commits nothing") {
  avout::testing::RedisServer redis;
  avout::testing::TcpRelay relay(redis.port());
  constexpr auto command_timeout = 2000ms;
  avout::redis::Store store(
      avout::redis::StoreOptions{.url = relay.url(), .command_timeout = command_timeout});
  avout::Client client(options());
  const std::string name = avout::testing::unique_name("/deadline-test", "stopped-store");
  auto in_redis = client.ref<long>(name + "/redis", 100, store);
  auto in_zookeeper = client.ref<long>(name + "/zookeeper", 100);
  const auto transfer = [&] {
    in_redis.alter([](long value) { return value - 1; });
    in_zookeeper.alter([](long value) { return value + 1; });
  };
  client.dosync(transfer);

  relay.set(avout::testing::TcpRelay::Mode::drop_all);
  constexpr auto deadline = 200ms;
  const auto started = Clock::now();
  CHECK_THROWS_AS(client.dosync(avout::Deadline::after(deadline), transfer), avout::Error);
  const auto took = Clock::now() - started;
  // The value's write may take one command timeout past the deadline; before, erasing it
  // (the attempt had failed) took a second one.
  CHECK_MESSAGE(
      took < deadline + command_timeout + scaled(1000ms),
      "took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");

  relay.set(avout::testing::TcpRelay::Mode::pass);
  const auto [redis_value, zookeeper_value] = avout::deref_all(in_redis, in_zookeeper);
  CHECK(redis_value == 99);
  CHECK(zookeeper_value == 101);
}
