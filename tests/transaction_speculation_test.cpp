// Speculative commits (docs/transactions.md): a dosync's first attempt reads as of this
// client's last commit, from the heads it cached, and its multi sets the clock only at the
// version that commit gave it. Whatever such an attempt reports (a value, a commit, the body's
// exception, a validator's refusal) must be as current as one with a read point of its own.
// Here another client commits in between, which this client's cache cannot know: the heads
// it kept from its own commit carry no watch.
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

using namespace std::chrono_literals;

namespace {

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 6000ms};
}

std::uint64_t zookeeper_requests(avout::Client& client, const std::function<void()>& work) {
  const auto before = client.session().statistics().requests;
  work();
  return client.session().statistics().requests - before;
}

// Commits `ref` unchanged until a commit goes out as its multi alone (speculative): then the
// client's next dosync speculates too, over heads kept from that commit.
void until_speculating(avout::Client& client, avout::Ref<long>& ref) {
  for (int i = 0; i < 200; ++i) {
    const auto requests = zookeeper_requests(
        client, [&] { client.dosync([&] { ref.alter([](long v) { return v; }); }); });
    if (requests == 1) return;
  }
  FAIL("no commit of this client was speculative in 200");
}

std::string name(const std::string& what) {
  return avout::testing::unique_name("/speculation-test", what);
}

// One ref of this client's and of another's, whose commits this client's cache cannot know
// of (the heads it kept from its own commits carry no watch).
struct SharedRef {
  explicit SharedRef(const std::string& what,
                     const avout::ClientOptions& client_options = options())
      : client(client_options),
        other(options()),
        mine(client.ref<long>(name(what), 0)),
        theirs(other.ref<long>(mine.name(), 0)) {}
  // Makes this client's next dosync speculate, then has the other client add `amount` first.
  void speculate_behind(long amount) {
    until_speculating(client, mine);
    other.dosync([&] { theirs.alter([amount](long v) { return v + amount; }); });
  }
  avout::Client client;
  avout::Client other;
  avout::Ref<long> mine;
  avout::Ref<long> theirs;
};

}  // namespace

TEST_CASE(
    "a speculative read-only transaction returns what another client committed after this one's "
    "last commit") {
  avout::testing::start_shared_servers();
  SharedRef ref("read-only");
  for (long round = 1; round <= 10; ++round) {
    ref.speculate_behind(1);
    int runs = 0;
    CHECK(ref.client.dosync([&] {
      ++runs;
      return ref.mine.deref();
    }) == round);
    CHECK(runs == 2);  // the speculative run read the kept head, then a confirmed one
  }
}

TEST_CASE("a speculative attempt's exception leaves dosync only if its reads were current") {
  avout::testing::start_shared_servers();
  SharedRef ref("exception");
  for (long round = 1; round <= 10; ++round) {
    ref.speculate_behind(1);
    int runs = 0;
    CHECK_NOTHROW(ref.client.dosync([&] {
      ++runs;
      if (ref.mine.deref() != round)
        throw std::runtime_error("read a value older than another client's commit");
    }));
    CHECK(runs == 2);
    // An exception from current reads passes through, once a sync and the clock confirmed them.
    until_speculating(ref.client, ref.mine);
    runs = 0;
    CHECK_THROWS_AS(ref.client.dosync([&] {
      ++runs;
      if (ref.mine.deref() == round) throw std::invalid_argument("current");
    }),
                    std::invalid_argument);
    CHECK(runs == 1);
  }
}

TEST_CASE(
    "a speculative commit written from a stale read runs again and writes from the current value, "
    "in every store") {
  avout::testing::start_shared_servers();
  avout::redis::Store redis(avout::testing::shared_redis().url());
  avout::Client client(options());
  avout::Client other(options());
  for (const bool in_redis : {false, true}) {
    CAPTURE(in_redis);
    const auto source = name("source");
    const auto copy = name("copy");
    auto x = in_redis ? client.ref<long>(source, 0, redis) : client.ref<long>(source, 0);
    auto y = in_redis ? client.ref<long>(copy, 0, redis) : client.ref<long>(copy, 0);
    auto their_x = in_redis ? other.ref<long>(source, 0, redis) : other.ref<long>(source, 0);
    for (long round = 1; round <= 10; ++round) {
      client.dosync([&] { x.alter([](long v) { return v; }); });  // x kept too
      until_speculating(client, y);
      other.dosync([&] { their_x.alter([](long v) { return v + 1; }); });
      int runs = 0;
      client.dosync([&] {
        ++runs;
        y.ref_set(x.deref());  // x only read: its stale head is caught by the clock alone
      });
      CHECK(runs == 2);
      CHECK(y.deref() == round);
    }
  }
}

TEST_CASE("a validator refusing a value computed from a stale read does not fail the dosync") {
  avout::testing::start_shared_servers();
  SharedRef ref("validated");
  ref.mine.set_validator([](long v) { return v >= 0; });
  for (int round = 0; round < 10; ++round) {
    ref.speculate_behind(5);
    // Stale, 3 less would be negative; current, it is not.
    CHECK_NOTHROW(ref.client.dosync([&] { ref.mine.alter([](long v) { return v - 3; }); }));
  }
  CHECK(ref.mine.deref() == 20);
}

TEST_CASE(
    "after a speculative commit fails, the client's next first attempts take a read point of their "
    "own") {
  avout::testing::start_shared_servers();
  avout::Client other(options());
  const auto shared = name("gate");
  auto theirs = other.ref<long>(shared, 0);
  // Another client commits between every two of ours: 100 of ours, in requests.
  auto interleaved = [&](avout::Client& client, avout::Ref<long>& mine) {
    const auto before = client.session().statistics().requests;
    for (int i = 0; i < 100; ++i) {
      other.dosync([&] { theirs.alter([](long v) { return v + 1; }); });
      client.dosync([&] { mine.alter([](long v) { return v + 1; }); });
    }
    return client.session().statistics().requests - before;
  };
  auto usual_options = options();
  usual_options.speculative_commits = false;
  avout::Client usual(usual_options);
  auto usual_ref = usual.ref<long>(shared, 0);
  usual.dosync([&] { usual_ref.alter([](long v) { return v; }); });
  const auto usual_requests = interleaved(usual, usual_ref);

  avout::Client client(options());
  auto mine = client.ref<long>(shared, 0);
  until_speculating(client, mine);
  const auto requests = interleaved(client, mine);
  // Each failed speculation adds its multi to the usual way's requests. After a failure the
  // next one waits 1, then 2, 4, ... first attempts: 7 of 100 speculate (the 1st, 3rd, 6th,
  // 11th, 20th, 37th and 70th); without the gate, all 100 would.
  CHECK(requests > usual_requests);
  CHECK(requests <= usual_requests + 7);
  CHECK(mine.deref() == 400);
}

TEST_CASE(
    "a speculative commute runs its body once however others commute in between, again only when "
    "something else it read changed") {
  avout::testing::start_shared_servers();
  avout::Client client(options());
  avout::Client other(options());
  const auto counter_name = name("counter");
  const auto limit_name = name("limit");
  auto counter = client.ref<long>(counter_name, 0);
  auto limit = client.ref<long>(limit_name, 0);
  auto their_counter = other.ref<long>(counter_name, 0);
  auto their_limit = other.ref<long>(limit_name, 0);
  auto add = [](long v) { return v + 1; };
  for (long round = 1; round <= 10; ++round) {
    until_speculating(client, counter);
    other.dosync([&] { their_counter.commute(add); });
    int runs = 0;
    const long returned = client.dosync([&] {
      ++runs;
      return counter.commute(add);
    });
    CHECK(runs == 1);                  // rule 4: a commute conflict never runs the body again
    CHECK(returned == 3 * round - 1);  // from the current value, not the one kept at our commit
    client.dosync([&] { limit.alter([](long v) { return v; }); });
    until_speculating(client, counter);
    other.dosync([&] { their_limit.alter(add); });
    runs = 0;
    client.dosync([&] {
      ++runs;
      if (limit.deref() != round) throw std::runtime_error("read a stale limit");
      counter.commute(add);
    });
    CHECK(runs == 2);  // what it read besides the commuted ref changed: the usual way
  }
  CHECK(counter.deref() == 30);
}

TEST_CASE(
    "a speculative attempt that read a ref before commuting it returns current values from both") {
  avout::testing::start_shared_servers();
  SharedRef ref("read-then-commute");
  for (long round = 1; round <= 10; ++round) {
    ref.speculate_behind(1);
    const auto [read, commuted] = ref.client.dosync([&] {
      const long before = ref.mine.deref();
      return std::pair{before, ref.mine.commute([](long v) { return v + 1; })};
    });
    CHECK(read == 2 * round - 1);
    CHECK(commuted == 2 * round);
  }
}

TEST_CASE(
    "a failed speculation is no attempt of retry_limit's: with one attempt allowed, the usual one "
    "still runs") {
  avout::testing::start_shared_servers();
  auto one_attempt = options();
  one_attempt.retry_limit = 1;
  SharedRef ref("one-attempt", one_attempt);
  for (long round = 1; round <= 5; ++round) {
    ref.speculate_behind(10);
    int runs = 0;
    CHECK_NOTHROW(ref.client.dosync([&] {
      ++runs;
      ref.mine.alter([](long v) { return v + 1; });
    }));
    CHECK(runs == 2);
    CHECK(ref.mine.deref() == 11 * round);
  }
}
