// A lock's pure parts, as functions over plain data (no server): what each writer policy
// decides, and that the engine's node kinds keep the lock nodes' wire names
// ("<w|r|g>-<16 hex digits>-<sequence>", as every avout process of this version writes).
#include "locks/lock_queues.hpp"
#include "locks/rw_policy.hpp"
#include "queue/queue_names.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using avout::WriterPolicy;
using avout::detail::lock_node_kind;
using avout::detail::LockQueue;
using avout::detail::ReadWritePolicy;

TEST_CASE("hard: readers wait for any queued writer; a writer closes no gate") {
  const auto& hard = ReadWritePolicy::of(WriterPolicy::hard);
  CHECK(hard.reader_barrier() == LockQueue::writers);
  CHECK_FALSE(hard.closes_gate());
  CHECK_FALSE(hard.waits_for_quiet());
}

TEST_CASE("soft and timed_soft: readers wait for closed gates only") {
  const auto& soft = ReadWritePolicy::of(WriterPolicy::soft);
  CHECK(soft.reader_barrier() == LockQueue::gates);
  CHECK(soft.closes_gate());
  CHECK_FALSE(soft.waits_for_quiet());
  const auto& timed = ReadWritePolicy::of(WriterPolicy::timed_soft);
  CHECK(timed.reader_barrier() == LockQueue::gates);
  CHECK(timed.closes_gate());
  CHECK(timed.waits_for_quiet());
}

TEST_CASE("lock node names keep their wire format") {
  const auto writers = lock_node_kind(LockQueue::writers);
  CHECK(avout::detail::is_queue_node("w-0123456789abcdef-0000000007", writers));
  CHECK(avout::detail::is_queue_node("w-0123456789abcdef--000000001", writers));  // wrapped
  CHECK_FALSE(avout::detail::is_queue_node("w-0123-0000000007", writers));        // short id
  CHECK_FALSE(avout::detail::is_queue_node("r-0123456789abcdef-0000000007", writers));
  CHECK_FALSE(avout::detail::is_queue_node("nested", writers));  // a lock named below this one
  CHECK(avout::detail::is_queue_node("r-0123456789abcdef-0000000007",
                                     lock_node_kind(LockQueue::readers)));
  CHECK(avout::detail::is_queue_node("g-0123456789abcdef-0000000007",
                                     lock_node_kind(LockQueue::gates)));
  const std::string prefix = avout::detail::fresh_prefix(writers);
  REQUIRE(prefix.size() == 2 + 16 + 1);  // "w-<16 hex digits>-"
  CHECK(prefix.starts_with("w-"));
  CHECK(prefix.ends_with("-"));
  CHECK(avout::detail::is_queue_node(prefix + "0000000042", writers));
}

TEST_CASE("lock nodes order across the sequence wrap") {
  const auto line = avout::detail::in_queue_order(
      {"w-0000000000000003--2147483647", "w-0000000000000001-2147483647",
       "w-0000000000000002--2147483648", "readers"},
      lock_node_kind(LockQueue::writers));
  CHECK(line == std::vector<std::string>{"w-0000000000000001-2147483647",
                                         "w-0000000000000002--2147483648",
                                         "w-0000000000000003--2147483647"});
}
