// The sequence suffix ZooKeeper appends to sequential nodes (core/src/queue/sequence.hpp) as
// functions over plain data, no server: what parses, and the order modulo 2^32 across the wrap.
#include "queue/sequence.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace {
using avout::detail::parse_sequence;
using avout::detail::sequence_after_dash;
using avout::detail::SequenceOrder;
constexpr std::int32_t lowest = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t highest = std::numeric_limits<std::int32_t>::max();
}  // namespace

TEST_CASE("sequence: the suffixes ZooKeeper prints with %010d parse, before and after the wrap") {
  CHECK(parse_sequence("0000000000") == 0);
  CHECK(parse_sequence("0000000005") == 5);
  CHECK(parse_sequence("2147483647") == highest);
  CHECK(parse_sequence("-2147483648") == lowest);  // the first after the wrap: 11 characters
  CHECK(parse_sequence("-000000001") == -1);       // the last before 0 again
  CHECK(parse_sequence("-000000005") == -5);
}

TEST_CASE("sequence: anything else is no sequence") {
  for (const char* text :
       {"", "000000005", "000000000005", "00000000x5", "+000000005", " 000000005", "0000000005 ",
        "2147483648", "-2147483649", "99999999999", "----------", "0x00000005"}) {
    CAPTURE(text);
    CHECK_FALSE(parse_sequence(text).has_value());
  }
}

TEST_CASE("sequence: found after the last dash, or from it when it is the sign") {
  CHECK(sequence_after_dash("w-0123456789abcdef-0000000007") == 7);
  CHECK(sequence_after_dash("send--000000005") == -5);
  CHECK(sequence_after_dash("send--2147483648") == lowest);
  CHECK(sequence_after_dash("send-2147483647") == highest);
  CHECK_FALSE(sequence_after_dash("nodash0000000005").has_value());
  CHECK_FALSE(sequence_after_dash("-0000000005").has_value());  // no prefix
  CHECK_FALSE(sequence_after_dash("send-000000005").has_value());
  CHECK_FALSE(sequence_after_dash("send-").has_value());
}

TEST_CASE("sequence order: by distance modulo 2^32, so the wrap keeps queue order") {
  const SequenceOrder before;
  CHECK(before(1, 2));
  CHECK_FALSE(before(2, 1));
  CHECK_FALSE(before(5, 5));
  CHECK(before(highest, lowest));  // 2147483647 then -2147483648
  CHECK_FALSE(before(lowest, highest));
  CHECK(before(-1, 0));  // -000000001 then 0000000000
  CHECK(before(lowest, -1));
  CHECK(before(highest - 10, lowest + 10));
}

TEST_CASE("sequence order: sorts a queue that spans either wrap") {
  const std::vector<std::vector<std::int32_t>> queues{
      {highest - 1, highest, lowest, lowest + 1},
      {-2, -1, 0, 1},
      {0, 1000, 1000000, 1000000000},
  };
  for (const auto& queue : queues) {
    auto shuffled = queue;
    std::reverse(shuffled.begin(), shuffled.end());
    std::rotate(shuffled.begin(), shuffled.begin() + 1, shuffled.end());
    std::sort(shuffled.begin(), shuffled.end(), SequenceOrder{});
    CHECK(shuffled == queue);
  }
}
