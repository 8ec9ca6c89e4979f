// The barrier's pure parts, as functions over plain names (no server): the folder record's
// bytes, which participants an open round counts, closing and reopening, and telling a
// member that left from one that died.
#include "recipes/barrier_round.hpp"

#include <avout/errors.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using avout::detail::BarrierRecord;
using avout::detail::BarrierRound;

namespace {

std::string node(const char* id, const char* sequence) {
  return std::string("p-") + id + "-" + sequence;
}
const std::string a = node("000000000000000a", "0000000001");
const std::string b = node("000000000000000b", "0000000002");
const std::string c = node("000000000000000c", "0000000003");

}  // namespace

TEST_CASE("the folder record round-trips open and closed rounds, and rejects other bytes") {
  const BarrierRecord fresh{3, {}};
  CHECK(avout::detail::decode_record(avout::detail::encode_record(fresh), "/b") == fresh);
  const BarrierRecord open{2, {7, false, -5, {}, false}};
  CHECK(avout::detail::decode_record(avout::detail::encode_record(open), "/b") == open);
  const BarrierRecord after_broken{2, {8, false, 12, {}, true}};
  CHECK(avout::detail::decode_record(avout::detail::encode_record(after_broken), "/b") ==
        after_broken);
  const BarrierRecord closed{2, {7, true, std::nullopt, {a, b}, false}};
  CHECK(avout::detail::decode_record(avout::detail::encode_record(closed), "/b") == closed);
  for (const char* bad :
       {"", "x open 0 -", "0 open 0 -", "2 closed 1 " /* no members */, "2 open 1 12x",
        "2 open 1 - extra", "2 open 1 - broke x", "1 closed 0 not-a-node"}) {
    CHECK_THROWS_AS(avout::detail::decode_record(avout::to_bytes(bad), "/b"), avout::CodecError);
  }
  CHECK_THROWS_AS(avout::detail::decode_record(avout::to_bytes("3 closed 0 " + a + " " + b), "/b"),
                  avout::CodecError);  // three participants, two members
}

TEST_CASE("an open round counts participants after the last round's members, in order") {
  const std::vector<std::string> children{c, "left-0-" + a, a, "nested", b};
  CHECK(avout::detail::round_line(children, BarrierRound{}) == std::vector<std::string>{a, b, c});
  const BarrierRound after_a{1, false, 1, {}, false};
  CHECK(avout::detail::round_line(children, after_a) == std::vector<std::string>{b, c});
}

TEST_CASE("closing takes the first N; the next round opens after the last member") {
  const auto closed =
      avout::detail::closed_round(BarrierRound{4, false, std::nullopt, {}, false}, {a, b, c}, 2);
  CHECK(closed == BarrierRound{4, true, std::nullopt, {a, b}, false});
  CHECK(avout::detail::next_round(closed, false) == BarrierRound{5, false, 2, {}, false});
  CHECK(avout::detail::next_round(closed, true) == BarrierRound{5, false, 2, {}, true});
}

TEST_CASE("a member is inside, left (its record), or dead (node gone without a record)") {
  const BarrierRound round{3, true, std::nullopt, {a, b, c}, false};
  const auto left_a = avout::detail::left_record(3, a);
  auto view = avout::detail::judge_leave(round, {a, b, c});
  CHECK(view.inside == std::vector<std::string>{a, b, c});
  CHECK_FALSE(view.dead);
  view = avout::detail::judge_leave(round, {left_a, b, c});  // a left and its node went
  CHECK(view.inside == std::vector<std::string>{b, c});
  CHECK_FALSE(view.dead);
  view = avout::detail::judge_leave(round, {a, left_a, c});  // b's node went without a record
  CHECK(view.dead == b);
  // A record of another round does not count for this one.
  view = avout::detail::judge_leave(round, {avout::detail::left_record(2, b), a, c});
  CHECK(view.dead == b);
  view = avout::detail::judge_leave(
      round, {left_a, avout::detail::left_record(3, b), avout::detail::left_record(3, c)});
  CHECK(view.inside.empty());
  CHECK_FALSE(view.dead);
}
