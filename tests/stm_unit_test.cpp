// The STM's pure parts, as functions over plain data, without a server: which operations a
// commit multi holds and in which order (rule 5, V4), history trimming (min/max history),
// and the ref head and barging tag records. What talks to ZooKeeper is
// tested against a real one (transaction_*_test.cpp).
#include "records/stm_records.hpp"
#include "stm/commit_layout.hpp"
#include "stm/history.hpp"
#include "stm/sibling_multis.hpp"

#include <avout/errors.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace {

using namespace avout;
using namespace avout::detail;

Bytes bytes(const std::string& text) { return Bytes(text.begin(), text.end()); }

// "kind path version" of each operation, for comparing whole multis at a glance.
std::vector<std::string> describe(const std::vector<Operation>& operations) {
  std::vector<std::string> out;
  for (const auto& operation : operations) {
    std::visit(
        [&](const auto& one) {
          using T = std::decay_t<decltype(one)>;
          if constexpr (std::is_same_v<T, op::Create>)
            out.push_back("create " + one.path);
          else if constexpr (std::is_same_v<T, op::Remove>)
            out.push_back("remove " + one.path + " " + std::to_string(one.version));
          else if constexpr (std::is_same_v<T, op::SetData>)
            out.push_back("set " + one.path + " " + std::to_string(one.version));
          else
            out.push_back("check " + one.path + " " + std::to_string(one.version));
        },
        operation);
  }
  return out;
}

HeadRecord head_with(std::vector<std::string> older, std::uint32_t keep) {
  HeadRecord head{Point{"newest"}, {}, keep};
  std::int64_t zxid = 100;
  for (auto& id : older) head.history.push_back(HeadEntry{zxid--, Point{id}});
  return head;
}

std::vector<std::string> ids(const std::vector<Point>& points) {
  std::vector<std::string> out;
  for (const auto& point : points) out.push_back(point.id);
  return out;
}

}  // namespace

TEST_CASE(
    "commit role: written or ensured is fixed, commuted only is recomputed, read only is none") {
  CHECK(commit_role(true, false, false) == CommitRole::fixed);
  CHECK(commit_role(false, true, false) == CommitRole::fixed);
  CHECK(commit_role(true, false, true) == CommitRole::fixed);
  CHECK(commit_role(false, true, true) ==
        CommitRole::fixed);  // commutes on an ensured ref check its version
  CHECK(commit_role(false, false, true) == CommitRole::commuted);
  CHECK(commit_role(false, false, false) == CommitRole::none);
}

TEST_CASE(
    "commit multi: marker, fixed heads, commuted heads, tags, additions, values, clock, clean-up") {
  CommitPlan plan;
  plan.marker = "/m/marker";
  plan.fixed = {{"/h/written", bytes("w"), 3}, {"/h/ensured", std::nullopt, 7}};
  plan.commuted = {{"/h/commuted", bytes("c"), 5}};
  plan.tags = {op::SetData{"/t/written", {}, 1}, op::Check{"/t/commuted", 2}};
  plan.additions = {{op::Create{"/a/send-", bytes("x"), CreateMode::ephemeral_sequential}},
                    {op::Check{"/l/lock", 0}, op::Check{"/l/other", 0}}};
  plan.values = {op::Create{"/v/point", bytes("value"), CreateMode::persistent}};
  plan.clock = "/clock";
  plan.cleanup = {"/v/trimmed", "/m/old-marker"};
  const CommitMulti multi = lay_out_commit_multi(plan);
  CHECK(describe(multi.operations) == std::vector<std::string>{
                                          "create /m/marker",
                                          "set /h/written 3",
                                          "check /h/ensured 7",
                                          "set /h/commuted 5",
                                          "set /t/written 1",
                                          "check /t/commuted 2",
                                          "create /a/send-",
                                          "check /l/lock 0",
                                          "check /l/other 0",
                                          "create /v/point",
                                          "set /clock -1",
                                          "remove /v/trimmed 0",
                                          "remove /m/old-marker 0",
                                      });
  CHECK(multi.first_commuted == 3);
  CHECK(multi.first_addition == 6);
  CHECK(multi.after_additions == 9);
  CHECK(multi.first_cleanup == 11);
  CHECK(multi.heads_set == std::vector<std::size_t>{1, 3});
  CHECK(std::get<op::SetData>(multi.operations[1]).data == bytes("w"));
  CHECK(std::get<op::SetData>(multi.operations[3]).data == bytes("c"));
}

TEST_CASE(
    "commit multi: read checks after the fixed heads and before the commuted ones (V4, rule 4)") {
  CommitPlan plan;
  plan.marker = "/m/marker";
  plan.fixed = {{"/h/written", bytes("w"), 3}};
  plan.read_checks = {{"/h/read", std::nullopt, 9}, {"/h/other", std::nullopt, 0}};
  plan.commuted = {{"/h/commuted", bytes("c"), 5}};
  plan.clock = "/clock";
  const CommitMulti multi = lay_out_commit_multi(plan);
  CHECK(describe(multi.operations) ==
        std::vector<std::string>{"create /m/marker", "set /h/written 3", "check /h/read 9",
                                 "check /h/other 0", "set /h/commuted 5", "set /clock -1"});
  // A failed read check lies before first_commuted: the whole attempt retries, never only
  // the commutes' recomputation.
  CHECK(multi.first_commuted == 4);
  CHECK(multi.heads_set == std::vector<std::size_t>{1, 4});
}

TEST_CASE("commit multi: the clock at any version, gone clean-up left out, nothing else") {
  CommitPlan plan;
  plan.marker = "/m/marker";
  plan.clock = "/clock";
  plan.cleanup = {"/v/a", "/m/b", "/v/c"};
  plan.gone = {"/m/b"};
  const CommitMulti multi = lay_out_commit_multi(plan);
  CHECK(describe(multi.operations) == std::vector<std::string>{"create /m/marker", "set /clock -1",
                                                               "remove /v/a 0", "remove /v/c 0"});
  CHECK(multi.first_commuted == 1);
  CHECK(multi.first_addition == 1);
  CHECK(multi.after_additions == 1);
  CHECK(multi.first_cleanup == 2);
  CHECK(multi.heads_set.empty());
}

TEST_CASE(
    "history to keep: what the head kept, grown by misses from min_history, at most max_history") {
  CHECK(history_to_keep(0, 0, 0, 0, 10) == 0);
  CHECK(history_to_keep(3, 0, 0, 0, 10) == 3);    // never shrinks by itself
  CHECK(history_to_keep(0, 0, 0, 2, 10) == 2);    // at least min_history
  CHECK(history_to_keep(0, 3, 0, 2, 10) == 5);    // this process's misses
  CHECK(history_to_keep(0, 1, 8, 2, 10) == 6);    // other processes' misses: half the child version
  CHECK(history_to_keep(0, 0, -4, 1, 10) == 1);   // a wrapped child version counts nothing
  CHECK(history_to_keep(0, 50, 0, 2, 10) == 10);  // at most max_history
  CHECK(history_to_keep(20, 0, 0, 0, 10) == 10);  // a head kept over a lowered max_history
}

TEST_CASE("next head: the new point newest, the old newest first in history, the oldest trimmed") {
  std::vector<Point> trimmed;
  const HeadRecord head = head_with({"older1", "older2", "older3"}, 3);
  const HeadRecord next = next_head(head, 200, Point{"fresh"}, 2, trimmed);
  CHECK(next.newest == Point{"fresh"});
  CHECK(next.keep == 2);
  REQUIRE(next.history.size() == 2);
  CHECK(next.history[0].zxid == 200);
  CHECK(next.history[0].point == Point{"newest"});
  CHECK(next.history[1].point == Point{"older1"});
  CHECK(ids(trimmed) == std::vector<std::string>{"older3", "older2"});  // oldest first
}

TEST_CASE("next head: keeping nothing trims the old newest; keeping more trims nothing") {
  std::vector<Point> trimmed;
  const HeadRecord none = next_head(head_with({}, 0), 7, Point{"fresh"}, 0, trimmed);
  CHECK(none.history.empty());
  CHECK(ids(trimmed) == std::vector<std::string>{"newest"});
  trimmed.clear();
  const HeadRecord all = next_head(head_with({"a", "b"}, 5), 7, Point{"fresh"}, 5, trimmed);
  CHECK(all.history.size() == 3);
  CHECK(trimmed.empty());
}

TEST_CASE("head record: round trip, and malformed bytes name the head") {
  const HeadRecord head = head_with({"a", "b"}, 4);
  const HeadRecord back = decode_head(encode_head(head), "/refs/x");
  CHECK(back.newest == head.newest);
  CHECK(back.keep == 4);
  REQUIRE(back.history.size() == 2);
  CHECK(back.history[1].zxid == head.history[1].zxid);
  CHECK(back.history[1].point == head.history[1].point);
  CHECK(names(head, Point{"b"}));
  CHECK(names(head, Point{"newest"}));
  CHECK_FALSE(names(head, Point{"c"}));
  Bytes truncated = encode_head(head);
  truncated.pop_back();
  CHECK_THROWS_AS(decode_head(truncated, "/refs/x"), CodecError);
  Bytes longer = encode_head(head);
  longer.push_back(0);
  CHECK_THROWS_AS(decode_head(longer, "/refs/x"), CodecError);
  CHECK_THROWS_AS(decode_head(Bytes{}, "/refs/x"), CodecError);
}

TEST_CASE("head record: a removed ref's tombstone is one byte that decodes as Deleted only") {
  const Bytes tombstone = encode_head_tombstone();
  CHECK(tombstone == Bytes{3});
  CHECK(is_head_tombstone(tombstone));
  CHECK_THROWS_AS(decode_head(tombstone, "/refs/x"), Deleted);
  CHECK_FALSE(is_head_tombstone(encode_head(head_with({"a"}, 1))));
  CHECK_FALSE(is_head_tombstone(Bytes{3, 0}));  // a longer record is no tombstone
  CHECK_THROWS_AS(decode_head(Bytes{3, 0}, "/refs/x"), CodecError);
}

TEST_CASE(
    "barging tag: round trip, empty is unclaimed, malformed throws; ages order oldest first") {
  const TransactionAge age{10, 20, 30};
  CHECK(decode_tag(encode_tag(age), "/tags/x") == age);
  CHECK_FALSE(decode_tag(Bytes{}, "/tags/x").has_value());
  Bytes truncated = encode_tag(age);
  truncated.pop_back();
  CHECK_THROWS_AS(decode_tag(truncated, "/tags/x"), CodecError);
  CHECK(TransactionAge{9, 99, 99} < age);  // lower read point first
  CHECK(TransactionAge{10, 19, 99} < age);
  CHECK(TransactionAge{10, 20, 29} < age);
}

TEST_CASE("writer_of: the session a point id was written by, nullopt without a writer prefix") {
  CHECK(writer_of("00000000000000ff-0123") == 255);
  CHECK(writer_of("0123456789abcdef-x") == 0x0123456789abcdefLL);
  CHECK_FALSE(writer_of("00000000000000ff").has_value());    // no '-' after the session
  CHECK_FALSE(writer_of("00000000000000fX-1").has_value());  // not hex
  CHECK_FALSE(writer_of("").has_value());
}

TEST_CASE(
    "V9: a head's read version is never -1: the session refuses versioned ops below -1 and "
    "writes past the last version") {
  // A check or set at -1 would match any version; heads and tags are only ever written
  // conditionally, so they stop at INT32_MAX and never wrap to -1 or below.
  CHECK_NOTHROW(require_version_headroom("/h", 0, true));
  CHECK_NOTHROW(require_version_headroom("/h", INT32_MAX - 1, true));
  CHECK_NOTHROW(require_version_headroom("/h", INT32_MAX, false));  // a check does not write
  CHECK_THROWS_AS(require_version_headroom("/h", INT32_MAX, true), VersionLimitReached);
  CHECK_THROWS_AS(require_version_headroom("/h", -2, false), VersionLimitReached);
  CHECK_THROWS_AS(require_version_headroom("/h", INT32_MIN, true), VersionLimitReached);
}

TEST_CASE("V8: a multi expecting a head at a version a sibling's multi expects waits for it") {
  using namespace std::chrono_literals;
  SiblingMultis multis;
  const std::vector<SiblingMultis::Key> first{{"/h/a", 3}, {"/h/b", 0}};
  CHECK_FALSE(multis.claim(first, Deadline{}));  // nobody else: no wait
  // Other heads, or the same head at another version, do not wait.
  CHECK_FALSE(multis.claim({{"/h/a", 4}, {"/h/c", 3}}, Deadline{}));
  multis.release({{"/h/a", 4}, {"/h/c", 3}});
  // The same (head, version) waits until the first is released; past its deadline, Timeout.
  CHECK_THROWS_AS(multis.claim({{"/h/b", 0}}, Deadline::after(20ms)), Timeout);
  std::atomic<bool> released{false};
  std::thread sibling([&] {
    std::this_thread::sleep_for(50ms);
    released = true;
    multis.release(first);
  });
  CHECK(multis.claim({{"/h/b", 0}}, Deadline::after(60s)));
  CHECK(released);
  sibling.join();
  multis.release({{"/h/b", 0}});
  CHECK_FALSE(multis.claim(first, Deadline{}));
}
