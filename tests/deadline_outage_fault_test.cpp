// Deadlines while ZooKeeper answers nothing (a frozen server: connections stay open, no reply
// comes): every call given a deadline returns within it, plus a little. A read cut short is
// Timeout and wrote nothing; a write cut short is OutcomeUnknown (it may have landed); a
// value stored whose change notice was cut short is CommittedWithError.
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "support/servers.hpp"
#include "support/tcp_relay.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

using namespace std::chrono_literals;
using avout::testing::scaled;
using Clock = std::chrono::steady_clock;

namespace {

avout::testing::ZooKeeperServer& zookeeper() {
  static avout::testing::ZooKeeperServer server;
  return server;
}

// A client whose every byte passes `relay`, with a session timeout long enough that the C
// client's own timeout (two thirds of it) cannot be what ends the call.
avout::ClientOptions through(const avout::testing::TcpRelay& relay) {
  return avout::ClientOptions{.hosts = relay.connect_string(), .session_timeout = 9000ms};
}

avout::ClientOptions direct() {
  return avout::ClientOptions{.hosts = zookeeper().connect_string(), .session_timeout = 9000ms};
}

// How far past its deadline a call may return: the 50 ms the design allows, plus the
// machine's noise (scaled, as every test timeout is).
std::chrono::milliseconds grace() { return scaled(400ms); }

// Runs `call` with ZooKeeper silent; returns the name of what it threw and checks it came
// within `limit` plus grace().
template <typename Call>
std::string outcome_within(std::chrono::milliseconds limit, Call call) {
  const auto started = Clock::now();
  std::string thrown = "nothing";
  try {
    call();
  } catch (const avout::OutcomeUnknown&) {
    thrown = "OutcomeUnknown";
  } catch (const avout::CommittedWithError&) {
    thrown = "CommittedWithError";
  } catch (const avout::Timeout&) {
    thrown = "Timeout";
  } catch (const avout::Error& error) {
    thrown = std::string("another error: ") + error.what();
  }
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  CAPTURE(thrown);
  CHECK(took < limit + grace());
  return thrown;
}

}  // namespace

TEST_CASE(
    "an atom swap given 1 s while ZooKeeper answers nothing is Timeout within it and writes "
    "nothing") {
  avout::testing::TcpRelay relay(zookeeper().port());
  avout::Client client(through(relay));
  const std::string name = "/outage-deadline/atom";
  auto counter = client.atom<long>(name, 0);
  counter.swap([](long v) { return v + 1; });

  relay.isolate();
  CHECK(outcome_within(1000ms, [&] {
          counter.swap(avout::Deadline::after(1000ms), [](long v) { return v + 1; });
        }) == "Timeout");
  relay.cut();

  avout::Client observer(direct());
  CHECK(observer.atom<long>(name, 0).deref() == 1);
}

TEST_CASE("an atom compare_and_set given 1 s while ZooKeeper answers nothing returns within it") {
  avout::testing::TcpRelay relay(zookeeper().port());
  avout::Client client(through(relay));
  auto flag = client.atom<long>("/outage-deadline/cas", 0);
  relay.isolate();
  CHECK(outcome_within(1000ms, [&] {
          flag.compare_and_set(avout::Deadline::after(1000ms), 0, 1);
        }) == "Timeout");
  relay.cut();
}

TEST_CASE(
    "a Redis-held atom's swap given 1 s stores its value and is CommittedWithError within it "
    "when ZooKeeper cannot take the change notice") {
  avout::testing::RedisServer redis;
  avout::redis::Store store{redis.url()};
  avout::testing::TcpRelay relay(zookeeper().port());
  avout::Client client(through(relay));
  const std::string name = "/outage-deadline/redis-atom";
  auto counter = client.atom<long>(name, 0, store);
  counter.swap([](long v) { return v + 1; });

  relay.isolate();  // the value goes to Redis; its notice to ZooKeeper never lands in time
  CHECK(outcome_within(1000ms, [&] {
          counter.swap(avout::Deadline::after(1000ms), [](long v) { return v + 1; });
        }) == "CommittedWithError");
  relay.cut();

  avout::Client observer(direct());
  CHECK(observer.atom<long>(name, 0, store).deref() == 2);
}

TEST_CASE(
    "a dosync given 1 s while ZooKeeper answers nothing returns within it, and a Timeout wrote "
    "nothing") {
  avout::testing::TcpRelay relay(zookeeper().port());
  avout::Client client(through(relay));
  const std::string name = "/outage-deadline/ref";
  auto account = client.ref<long>(name, 0);
  client.dosync([&] { account.alter([](long v) { return v + 1; }); });

  relay.isolate();
  const auto thrown = outcome_within(1000ms, [&] {
    client.dosync(avout::Deadline::after(1000ms),
                  [&] { account.alter([](long v) { return v + 1; }); });
  });
  CHECK((thrown == "Timeout" || thrown == "OutcomeUnknown"));
  relay.cut();

  avout::Client observer(direct());
  const long value = observer.ref<long>(name, 0).deref();
  if (thrown == "Timeout")
    CHECK(value == 1);
  else
    CHECK((value == 1 || value == 2));
}
