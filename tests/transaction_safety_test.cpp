// Refs and dosync keep their promise where a protocol review found gaps: gc stays inside its
// deployment and kind, a landed commit is never run twice, handles of one ref are one ref,
// names nest, plain reads survive trimming, and a commit too large for one request is refused
// before anything is written, naming snapshot isolation when read checks overflow it (the
// slow cases: transaction_safety_fault_test).
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "stm/transaction.hpp"  // white-box: adds to a commit as agents and locks do
#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/trimmed_reads.hpp"

#include <doctest/doctest.h>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/stm-safety", stem);
}

void start_servers() { avout::testing::start_shared_servers(); }

avout::ClientOptions options(const std::string& root = "/avout", std::size_t retry_limit = 10000) {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 4000ms,
                              .root = root,
                              .retry_limit = retry_limit};
}

long plus(long value, long delta) { return value + delta; }

// Attaches the refs named `prefix`-0, -1, ... -(count - 1), creating each missing one with its
// index, from several threads (creating hundreds one by one is slow); in no particular order.
std::vector<avout::Ref<long>> attach_refs(avout::Client& client, const std::string& prefix,
                                          int count) {
  std::vector<avout::Ref<long>> refs;
  std::mutex mutex;
  constexpr int threads = 16;
  std::vector<std::thread> makers;
  for (int first = 0; first < threads; ++first) {
    makers.emplace_back([&, first] {
      for (int i = first; i < count; i += threads) {
        auto ref = client.ref<long>(prefix + "-" + std::to_string(i), i);
        std::lock_guard lock(mutex);
        refs.push_back(ref);
      }
    });
  }
  for (auto& maker : makers) maker.join();
  return refs;
}

// How many long-named refs the cases overflowing a commit request share.
constexpr int long_named_count = 960;

// The prefix of long_named_count refs (see attach_refs) whose names come near the
// 1024-character limit, made once per run for the cases that overflow a commit request with
// them: making them takes seconds, and no case writes them (their commits are refused).
const std::string& long_named_prefix() {
  static const std::string prefix = [] {
    const std::string made = unique_name("long") + "/" + std::string(950, 'x');
    avout::Client client(options());
    (void)attach_refs(client, made, long_named_count);
    return made;
  }();
  return prefix;
}

}  // namespace

TEST_CASE("gc of one deployment never erases the values of another deployment sharing a store") {
  start_servers();
  const std::string deployments = unique_name("deployments");
  avout::Client one(options(deployments + "/one"));
  avout::Client two(options(deployments + "/two"));
  avout::redis::Store redis(avout::testing::shared_redis().url());
  auto mine = one.ref<long>("/balance", 1, redis);
  auto theirs = two.ref<long>("/balance", 2, redis);
  two.dosync([&] { theirs.alter(plus, 1); });

  (void)one.gc({redis});
  // Fresh clients: a client's own cache of values would hide an erased one.
  avout::Client reader(options(deployments + "/two"));
  CHECK(reader.ref<long>("/balance", 0, redis).deref() == 3);
  CHECK(mine.deref() == 1);
}

TEST_CASE("gc never erases an agent's value for a ref whose name starts with /agents") {
  start_servers();
  const std::string name = unique_name("kinds");
  avout::redis::Store redis(avout::testing::shared_redis().url());
  {
    avout::Client sender(options());
    auto agent = sender.agent<long>(name, 0, redis);
    agent.send(plus, 5);
    agent.await();
  }  // the agent's writer is gone: its values look like a dead writer's garbage
  avout::Client client(options());
  auto ref = client.ref<long>("/agents" + name, 1, redis);
  (void)client.gc({redis});
  CHECK(client.agent<long>(name, 0, redis).deref() == 5);
  CHECK(ref.deref() == 1);
}

TEST_CASE("a commit callback that fails after the commit landed never reruns the body") {
  start_servers();
  avout::Client client(options("/avout", 3));
  auto counter = client.ref<long>(unique_name("landed"), 0);
  int runs = 0;
  CHECK_THROWS_AS(client.dosync([&] {
    ++runs;
    counter.alter(plus, 1);
    avout::detail::Transaction::current()->add_to_commit({}, [](const auto&) {
      throw avout::SessionExpired("test: the session expired right after the commit");
    });
  }),
                  avout::CommittedWithError);
  CHECK(runs == 1);
  CHECK(counter.deref() == 1);
}

TEST_CASE("two handles of one ref are one ref inside a transaction") {
  start_servers();
  avout::Client client(options("/avout", 5));
  const std::string name = unique_name("handles");
  auto first = client.ref<long>(name, 0);
  auto second = client.ref<long>(name, 0);
  client.dosync([&] {
    first.alter(plus, 1);
    CHECK(second.deref() == 1);  // read-your-writes through the other handle
    second.alter(plus, 1);
  });
  CHECK(first.deref() == 2);
  client.dosync([&] {
    first.commute(plus, 5);
    second.commute(plus, 5);
  });
  CHECK(second.deref() == 12);
}

TEST_CASE("a ref named inside another ref's name is usable whichever is attached first") {
  start_servers();
  avout::Client client(options());
  avout::redis::Store redis(avout::testing::shared_redis().url());
  const std::string prefix = unique_name("nested");
  auto inner_first = client.ref<long>(prefix + "/n/a", 1);
  auto outer_second = client.ref<long>(prefix + "/n", 2, redis);
  auto outer_first = client.ref<long>(prefix + "/m", 3);
  auto inner_second = client.ref<long>(prefix + "/m/a", 4, redis);
  client.dosync([&] {
    for (auto* ref : {&inner_first, &outer_second, &outer_first, &inner_second})
      ref->alter(plus, 10);
  });
  (void)client.gc({redis});
  CHECK(inner_first.deref() == 11);
  CHECK(outer_second.deref() == 12);
  CHECK(outer_first.deref() == 13);
  CHECK(inner_second.deref() == 14);
}

TEST_CASE("reads inside and outside dosync never fail while another process trims what they read") {
  start_servers();
  avout::testing::check_reads_survive_trimming(options(), options(), unique_name("trimmed"));
}

TEST_CASE("gc keeps a commit marker its owner may still be resolving, whatever grace it is given") {
  start_servers();
  avout::Client client(options());
  // A marker as a commit whose reply was lost leaves it (owner session id, then a unique id).
  const std::string marker = avout::inspect::marker_path(
      client, unique_name("0000000000000001-marker").substr(std::string("/stm-safety/").size()));
  client.session().create(marker, {}, avout::CreateMode::persistent);
  std::this_thread::sleep_for(50ms);
  (void)client.gc({}, 1ms);
  CHECK(client.session().exists(marker).has_value());
  client.session().remove(marker, 0);
}

TEST_CASE(
    "a transaction whose commit cannot fit in one ZooKeeper request is ValueTooLarge before "
    "anything is written") {
  start_servers();
  avout::Client client(options("/avout", 3));
  // Long names make each ref's head and tag cost about 2.3 KB of the commit request.
  const std::string& prefix = long_named_prefix();
  auto refs = attach_refs(client, prefix, 540);
  CHECK_THROWS_AS(client.dosync([&] {
    for (auto& ref : refs) ref.alter(plus, 1);
  }),
                  avout::ValueTooLarge);
  avout::Client reader(options());
  CHECK(reader.ref<long>(prefix + "-539", 0).deref() == 539);
}

TEST_CASE(
    "a serializable commit whose read checks alone overflow the request is ValueTooLarge naming "
    "Isolation::snapshot, which commits it") {
  start_servers();
  avout::Client client(options("/avout", 3));
  const std::string written_name = unique_name("checked-written");
  auto written = client.ref<long>(written_name, 0);
  // Each ref read costs the commit request a check of its head: about 128 bytes and the
  // head's path, over 1 KB with these names, so these reads overflow ZooKeeper's 960 KB.
  const auto read = attach_refs(client, long_named_prefix(), long_named_count);
  const std::size_t check_bytes =
      128 + avout::inspect::ref_head_path(client, long_named_prefix() + "-0").size();
  REQUIRE(std::size_t{long_named_count} * check_bytes > 1'000'000);
  const auto body = [&] {
    long sum = 0;
    for (const auto& ref : read) sum += ref.deref();
    written.ref_set(sum);
  };
  try {
    client.dosync(body);
    FAIL("a commit of " << long_named_count << " read checks was sent");
  } catch (const avout::ValueTooLarge& error) {
    CHECK(std::string(error.what()).find("Isolation::snapshot") != std::string::npos);
  }
  avout::Client reader(options());
  auto seen = reader.ref<long>(written_name, -1);
  CHECK(seen.deref() == 0);  // nothing was written
  // Snapshot isolation checks only the ref written: the same body commits.
  client.dosync(avout::Isolation::snapshot, body);
  CHECK(seen.deref() == long{long_named_count} * (long_named_count - 1) / 2);
}

TEST_CASE(
    "a ref asked for with another type than it holds is a CodecError naming the ref and both "
    "types") {
  start_servers();
  avout::Client client(options());
  const std::string name = unique_name("typed");
  auto text = client.ref<std::string>(name, "hello");
  try {
    (void)client.ref<long>(name, 0);
    FAIL("a long handle of a string ref was made");
  } catch (const avout::CodecError& error) {
    const std::string message = error.what();
    CHECK(message.find(name) != std::string::npos);
    CHECK(message.find("string") != std::string::npos);
    CHECK(message.find("integer") != std::string::npos);
  }
  CHECK(text.deref() == "hello");
}
