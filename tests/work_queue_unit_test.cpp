// The work queue's pure parts, as functions over plain names (no server): which items a take
// tries, in which order, and which items fit a node.
#include "recipes/work_queue_items.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using avout::detail::item_fits;
using avout::detail::items_to_try;

TEST_CASE("a take tries the items oldest first, other children left out") {
  const std::vector<std::string> children{"i-b-0000000002", "waiters", "i-a-0000000001",
                                          "w-c-0000000000", "i-c-0000000010"};
  CHECK(items_to_try("/q", children, {}) ==
        std::vector<std::string>{"/q/i-a-0000000001", "/q/i-b-0000000002", "/q/i-c-0000000010"});
}

TEST_CASE("items are ordered by sequence modulo 2^32 across the wrap") {
  const std::vector<std::string> children{"i-new--2147483647", "i-old-2147483646",
                                          "i-mid--2147483648"};
  CHECK(items_to_try("/q", children, {}) == std::vector<std::string>{"/q/i-old-2147483646",
                                                                     "/q/i-mid--2147483648",
                                                                     "/q/i-new--2147483647"});
}

TEST_CASE("an item this transaction deletes already is not tried again") {
  const std::vector<std::string> children{"i-a-0000000001", "i-b-0000000002"};
  const std::vector<avout::Operation> pending{
      avout::op::Check{"/locks/l/w-x-0000000001", 0}, avout::op::Remove{"/q/i-a-0000000001", 0},
      avout::op::Create{"/q/i-z-", {}, avout::CreateMode::persistent_sequential}};
  CHECK(items_to_try("/q", children, pending) == std::vector<std::string>{"/q/i-b-0000000002"});
}

TEST_CASE("an item fits a node up to the request bound") {
  CHECK(item_fits("/avout/queues/jobs", 0));
  CHECK(item_fits("/avout/queues/jobs", 900 * 1024));
  CHECK_FALSE(item_fits("/avout/queues/jobs", 1024 * 1024));
}
