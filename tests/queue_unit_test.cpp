// The sequential queue's pure parts, as functions over plain names (no server): which
// children are a queue's nodes, their order across the wrap of ZooKeeper's signed 32-bit
// counter, and who holds or is watched under a mutex, a semaphore and a reader's rule.
#include "queue/hold_rule.hpp"
#include "queue/queue_names.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using avout::detail::HoldRule;
using avout::detail::NodeKind;
using avout::detail::Turn;

namespace {

const NodeKind writers{"w", 16};
const NodeKind sends{"s", 0};

std::vector<std::string> names(std::initializer_list<const char*> list) {
  return {list.begin(), list.end()};
}

}  // namespace

TEST_CASE("a queue node is <kind>-<id>-<sequence>, with the id its kind asks for") {
  CHECK(is_queue_node("w-0123456789abcdef-0000000007", writers));
  CHECK(is_queue_node("w-0123456789abcdef--000000005", writers));  // a wrapped counter
  CHECK(is_queue_node("w-0123456789abcdef--2147483648", writers));
  CHECK_FALSE(is_queue_node("w-0123456789abcdeg-0000000007", writers));  // not hex
  CHECK_FALSE(is_queue_node("w-0123456789abcde-0000000007", writers));   // 15 digits
  CHECK_FALSE(is_queue_node("r-0123456789abcdef-0000000007", writers));  // another kind
  CHECK_FALSE(is_queue_node("w-0123456789abcdef-000000007", writers));   // 9 digits
  CHECK_FALSE(is_queue_node("writers", writers));
  CHECK_FALSE(is_queue_node("w--0000000007", sends));
  CHECK(is_queue_node("s-1b4e28ba-2fa1-11d2-883f-0016d3cca427-0000000001", sends));
  CHECK(is_queue_node("s-n1b4e28ba-2fa1-11d2-883f-0016d3cca427--000000001", sends));
  CHECK_FALSE(is_queue_node("s--0000000001", sends));  // no id
  CHECK_FALSE(is_queue_node("sx-id-0000000001", sends));
}

TEST_CASE("one sequence_of reads the counter ZooKeeper appended, negative ones included") {
  using avout::detail::sequence_of;
  CHECK(sequence_of("w-0123456789abcdef-0000000007") == 7);
  CHECK(sequence_of("w-0123456789abcdef-2147483647") == 2147483647);
  CHECK(sequence_of("w-0123456789abcdef--2147483648") == -2147483647 - 1);
  CHECK(sequence_of("s-n1b4e28ba-2fa1-11d2-883f-0016d3cca427--000000001") == -1);
  CHECK_FALSE(sequence_of("writers").has_value());
}

TEST_CASE("the queue is in sequence order modulo 2^32, across the counter's wrap") {
  const auto line = avout::detail::in_queue_order(
      names({"s-c--2147483647", "s-a-2147483646", "readers", "s-d-2147483647", "s-b--2147483648",
             "w-0123456789abcdef-0000000001"}),
      sends);
  CHECK(line == names({"s-a-2147483646", "s-d-2147483647", "s-b--2147483648", "s-c--2147483647"}));
  // The second wrap: from -1 on to 0 (the live nodes span less than 2^31 of the counter).
  CHECK(avout::detail::in_queue_order(names({"s-b-0000000000", "s-a--000000001"}), sends) ==
        names({"s-a--000000001", "s-b-0000000000"}));
}

TEST_CASE("a fresh prefix carries a unique id of the kind's shape") {
  const auto hex = avout::detail::fresh_prefix(writers);
  CHECK(is_queue_node(hex + "0000000001", writers));
  CHECK(hex != avout::detail::fresh_prefix(writers));
  const auto named = avout::detail::fresh_prefix(sends, "n");
  CHECK(named.starts_with("s-n"));
  CHECK(is_queue_node(named + "0000000001", sends));
  CHECK(avout::detail::prefix_for(sends, "tag") == "s-tag-");
  CHECK(avout::detail::name_of("/a/b/s-tag-0000000001") == "s-tag-0000000001");
}

TEST_CASE("a mutex: the first holds, each waiter watches its predecessor only") {
  const auto line = names({"a", "b", "c"});
  const auto mutex = HoldRule::first(1);
  CHECK(mutex.turn(line, 0).holds);
  CHECK(mutex.turn(line, 0).watch.empty());
  CHECK_FALSE(mutex.turn(line, 1).holds);
  CHECK(mutex.turn(line, 1).watch == names({"a"}));
  CHECK(mutex.turn(line, 2).watch == names({"b"}));
  CHECK_THROWS(mutex.turn(line, 4));
  CHECK_THROWS(HoldRule::first(0));
}

TEST_CASE("a semaphore of N: the first N hold, a waiter watches the N nodes right ahead") {
  const auto line = names({"a", "b", "c", "d", "e"});
  const auto two = HoldRule::first(2);
  CHECK(two.turn(line, 0).holds);
  CHECK(two.turn(line, 1).holds);
  CHECK(two.turn(line, 2).watch == names({"a", "b"}));
  CHECK(two.turn(line, 4).watch == names({"c", "d"}));
  // A waiter between leaving wakes the one behind it: with one watch ("c" only on "a") it
  // would sleep on while "b" and "d" alone are ahead and it may hold as soon as "a" goes.
  const auto after = names({"a", "b", "d", "e"});
  CHECK(two.turn(after, 3).watch == names({"b", "d"}));
  CHECK(two.turn(after, 1).holds);
}

TEST_CASE("a reader: only writers ahead count, and it watches the nearest") {
  const auto reader = HoldRule::no_writer_ahead("w");
  const auto line = names(
      {"r-1-0000000001", "w-2-0000000002", "r-3-0000000003", "w-4-0000000004", "r-5-0000000005"});
  CHECK(reader.turn(line, 0).holds);
  CHECK(reader.turn(line, 2).watch == names({"w-2-0000000002"}));
  CHECK(reader.turn(line, 4).watch == names({"w-4-0000000004"}));
  // A reader queued in its own folder, after every writer (or gate) listed: line.size().
  CHECK(reader.turn(names({"w-2-0000000002", "w-4-0000000004"}), 2).watch ==
        names({"w-4-0000000004"}));
  CHECK(reader.turn({}, 0).holds);
}

TEST_CASE("a turn among a raw listing: ordered, own found, or vanished") {
  using avout::detail::turn_among;
  const auto children =
      names({"w-0123456789abcdef--2147483648", "gates", "w-fedcba9876543210-2147483647"});
  const auto mutex = HoldRule::first(1);
  CHECK(turn_among(children, "w-fedcba9876543210-2147483647", writers, mutex).holds);
  const auto behind = turn_among(children, "w-0123456789abcdef--2147483648", writers, mutex);
  CHECK(behind.watch == names({"w-fedcba9876543210-2147483647"}));
  CHECK(turn_among(children, "w-0000000000000000-0000000001", writers, mutex).vanished);
  CHECK(turn_among(children, "", writers, HoldRule::no_writer_ahead("w")).watch ==
        names({"w-0123456789abcdef--2147483648"}));
}
