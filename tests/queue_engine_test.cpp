// The sequential-queue engine (core/src/queue/sequential_queue.hpp) against a real ZooKeeper:
// protected creates found again after a lost reply (alone and inside a multi), the queue's
// order across the wrap of the sequential counter, whom a waiter watches under a mutex, a
// semaphore and a reader's rule, release at an exact version, a listing of the session's own
// writes (no sync) and a create its gate refuses.
#include <avout/errors.hpp>
#include <avout/zookeeper_session.hpp>

#include "queue/sequential_queue.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <random>
#include <thread>

using namespace std::chrono_literals;
using avout::Deadline;
using avout::detail::HoldRule;
using avout::detail::NodeKind;
using avout::detail::SequentialQueue;
using avout::testing::scaled;

namespace {

avout::SessionOptions options() {
  return avout::SessionOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                               .session_timeout = 4000ms,
                               .connect_timeout = scaled(10000ms)};
}

std::string unique_folder(const std::string& stem) {
  return avout::testing::unique_name("/queue-engine-test", stem);
}

const NodeKind writers{"w", 16};

Deadline soon() { return Deadline::after(scaled(20s)); }

std::string made(SequentialQueue& queue) {
  auto path = queue.create(queue.fresh_prefix(), {}, soon());
  REQUIRE(path.has_value());
  return avout::detail::name_of(*path);
}

}  // namespace

TEST_CASE("created nodes are listed in creation order, other children left out") {
  avout::ZooKeeperSession session(options());
  const auto folder = unique_folder("order");
  session.create_recursive(folder + "/nested");  // a folder of a name nested below
  SequentialQueue queue(session, folder, writers);
  std::vector<std::string> created;
  for (int i = 0; i < 4; ++i) created.push_back(made(queue));
  (void)session.create(folder + "/r-0123456789abcdef-", {},
                       avout::CreateMode::ephemeral_sequential);
  CHECK(queue.list(soon()) == created);
}

TEST_CASE("a listing of this session's own writes needs no sync; a refused create makes nothing") {
  avout::ZooKeeperSession session(options());
  const auto folder = unique_folder("own-writes");
  session.create_recursive(folder);
  SequentialQueue queue(session, folder, writers);
  std::vector<std::string> created;
  for (int i = 0; i < 3; ++i) created.push_back(made(queue));
  CHECK(queue.list(soon(), {}, avout::detail::Freshness::own_writes) == created);
  int asked = 0;
  const auto refused = queue.create(queue.fresh_prefix(), {}, soon(), [&] {
    ++asked;
    return false;
  });
  CHECK_FALSE(refused.has_value());
  CHECK(asked == 1);
  CHECK(queue.list(soon()) == created);
  CHECK(queue.create(queue.fresh_prefix(), {}, soon(), [] { return true; }).has_value());
}

TEST_CASE("the order holds across the sequential counter's wrap past 2^31") {
  (void)avout::testing::shared_zookeeper();
  avout::ZooKeeperSession session(options());
  const auto folder = unique_folder("wrap");
  session.create_recursive(folder);
  // The fresh folder counts 0, 1, 2, 3: shown as 2147483646, 2147483647, -2147483648, ...
  avout::testing::CounterOffset wrap(folder, (std::int64_t{1} << 31) - 2);
  SequentialQueue queue(session, folder, writers);
  std::vector<std::string> created;
  for (int i = 0; i < 4; ++i) created.push_back(made(queue));
  CHECK(created[2].ends_with("--2147483648"));  // the injector did show the wrap
  CHECK(queue.list(soon()) == created);
  // The first still holds a mutex; the wrapped ones wait behind their predecessors.
  const auto turn = queue.turn(created[2], HoldRule::first(1), {}, soon());
  REQUIRE(turn.has_value());
  CHECK(turn->watch == std::vector<std::string>{created[1]});
  CHECK(queue.turn(created[0], HoldRule::first(1), {}, soon())->holds);
}

TEST_CASE("a create whose reply was lost is found again, not made twice") {
  avout::ZooKeeperSession session(options());
  const auto folder = unique_folder("lost");
  session.create_recursive(folder);
  SequentialQueue queue(session, folder, writers);
  const auto prefix = queue.fresh_prefix();
  avout::testing::fail_next(avout::testing::ZooKeeperCall::create, folder, 1, true);
  const auto path = queue.create(prefix, {}, soon());
  CHECK(avout::testing::failures_to_come() == 0);
  REQUIRE(path.has_value());
  CHECK(path->starts_with(folder + "/" + prefix));
  CHECK(session.children(folder).size() == 1);
  CHECK(queue.find(prefix, soon()) == path);
  CHECK_FALSE(queue.find(queue.fresh_prefix(), soon()).has_value());
}

TEST_CASE("a create failed before it went out is made once") {
  avout::ZooKeeperSession session(options());
  const auto folder = unique_folder("early");
  session.create_recursive(folder);
  SequentialQueue queue(session, folder, NodeKind{"s", 0},
                        avout::CreateMode::persistent_sequential);
  avout::testing::fail_next(avout::testing::ZooKeeperCall::create, folder, 2);
  const auto path = queue.create(queue.fresh_prefix("n"), avout::to_bytes("x"), soon());
  REQUIRE(path.has_value());
  CHECK(session.children(folder).size() == 1);
  CHECK(session.get(*path).data == avout::to_bytes("x"));
}

TEST_CASE("creates grouped in a caller's multi are found again after its reply was lost") {
  avout::ZooKeeperSession session(options());
  const auto folder = unique_folder("multi");
  session.create_recursive(folder);
  SequentialQueue queue(session, folder, NodeKind{"s", 0});
  const std::vector<std::string> prefixes{queue.fresh_prefix(), queue.fresh_prefix("n")};
  std::vector<avout::Operation> operations;
  for (const auto& prefix : prefixes) operations.push_back(queue.create_op(prefix));
  avout::testing::fail_next(avout::testing::ZooKeeperCall::multi, folder, 1, true);
  CHECK_THROWS_AS(session.multi(operations), avout::ConnectionLoss);
  const auto first = queue.find(prefixes[0], soon());
  const auto second = queue.find(prefixes[1], soon());
  REQUIRE(first.has_value());
  REQUIRE(second.has_value());
  const auto line = queue.list(soon());
  CHECK(*line ==
        std::vector<std::string>{avout::detail::name_of(*first), avout::detail::name_of(*second)});
}

TEST_CASE("a mutex waiter watches its predecessor only, and wakes when it is released") {
  avout::ZooKeeperSession session(options());
  const auto folder = unique_folder("mutex");
  session.create_recursive(folder);
  SequentialQueue queue(session, folder, writers);
  const auto a = made(queue), b = made(queue), c = made(queue);
  std::atomic<int> woken_b{0}, woken_c{0};
  const auto mutex = HoldRule::first(1);
  CHECK(queue.turn(a, mutex, {}, soon())->holds);
  const auto turn_b = queue.turn(
      b, mutex, [&](const avout::WatchEvent&) { ++woken_b; }, soon());
  const auto turn_c = queue.turn(
      c, mutex, [&](const avout::WatchEvent&) { ++woken_c; }, soon());
  CHECK(turn_b->watch == std::vector<std::string>{a});
  CHECK(turn_c->watch == std::vector<std::string>{b});
  CHECK_THROWS_AS(queue.release(folder + "/" + a, 1, soon()), avout::BadVersion);
  CHECK(queue.release(folder + "/" + a, 0, soon()) == true);
  CHECK(queue.release(folder + "/" + a, 0, soon()) == false);  // already gone
  const auto until = std::chrono::steady_clock::now() + scaled(10s);
  while (woken_b == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
  CHECK(woken_b == 1);
  CHECK(woken_c == 0);  // no herd
  CHECK(queue.turn(b, mutex, {}, soon())->holds);
  session.remove(folder + "/" + c);
  CHECK(queue.turn(c, mutex, {}, soon())->vanished);
}

TEST_CASE("a semaphore's waiter watches the N nodes ahead; one already gone means look again") {
  avout::ZooKeeperSession session(options());
  const auto folder = unique_folder("semaphore");
  session.create_recursive(folder);
  SequentialQueue queue(session, folder, writers);
  std::vector<std::string> line;
  for (int i = 0; i < 4; ++i) line.push_back(made(queue));
  const auto two = HoldRule::first(2);
  CHECK(queue.turn(line[1], two, {}, soon())->holds);
  const auto waiting = queue.turn(line[3], two, {}, soon());
  CHECK_FALSE(waiting->holds);
  CHECK(waiting->watch == std::vector<std::string>{line[1], line[2]});
  REQUIRE(queue.release(folder + "/" + line[0], 0, soon()) == true);
  REQUIRE(queue.release(folder + "/" + line[2], 0, soon()) == true);
  CHECK(queue.turn(line[3], two, {}, soon())->holds);
}

TEST_CASE("a reader queued in its own folder watches the newest writer, and holds without") {
  avout::ZooKeeperSession session(options());
  const auto folder = unique_folder("readers");
  session.create_recursive(folder + "/writers");
  SequentialQueue writer_queue(session, folder + "/writers", writers);
  const auto reader = HoldRule::no_writer_ahead("w");
  CHECK(writer_queue.turn("", reader, {}, soon())->holds);
  const auto first = made(writer_queue), second = made(writer_queue);
  const auto turn = writer_queue.turn("", reader, {}, soon());
  CHECK_FALSE(turn->holds);
  CHECK(turn->watch == std::vector<std::string>{second});
  (void)first;
}

TEST_CASE("a listing sent right behind the create already holds it: one round trip") {
  avout::ZooKeeperSession session(options());
  const auto folder = unique_folder("pipelined");
  session.create_recursive(folder);
  SequentialQueue queue(session, folder, writers);
  const auto op = queue.create_op(queue.fresh_prefix());
  auto created = session.create_async(op.path, op.data, op.mode);
  auto listed = session.children_async(folder);
  const auto own = avout::detail::name_of(created.get());
  const auto turn = queue.turn_in(listed.get(), own, HoldRule::first(1), {}, soon());
  REQUIRE(turn.has_value());
  CHECK(turn->holds);
}

TEST_CASE("a create or a listing past its deadline gives up and says so") {
  avout::ZooKeeperSession session(options());
  const auto folder = unique_folder("deadline");
  session.create_recursive(folder);
  SequentialQueue queue(session, folder, writers);
  const auto passed = Deadline::at(std::chrono::steady_clock::now() - 1ms);
  CHECK_FALSE(queue.create(queue.fresh_prefix(), {}, passed).has_value());
  CHECK_FALSE(queue.list(passed).has_value());
  CHECK(session.children(folder).empty());  // nothing was sent
}
