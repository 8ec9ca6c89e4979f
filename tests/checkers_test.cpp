// The checkers of support/checkers.hpp judged on histories built by hand: each anomaly they
// exist to find is found, and the same shape without the anomaly passes. (The randomized
// workload runs them on real histories; these show they can fail.)
#include "support/checkers.hpp"

#include <doctest/doctest.h>

#include <algorithm>

namespace {

using avout::testing::Operation;

// A transaction of process 0 that completed "ok" with `micro` as argument and result.
Operation transaction(std::int64_t id, std::int64_t invoked, std::int64_t completed,
                      nlohmann::json micro) {
  return Operation{.id = id,
                   .f = "txn",
                   .outcome = "ok",
                   .invoked_ns = invoked,
                   .completed_ns = completed,
                   .argument = micro,
                   .result = micro};
}

bool mentions(const std::vector<std::string>& problems, const std::string& what) {
  return std::any_of(problems.begin(), problems.end(), [&](const std::string& problem) {
    return problem.find(what) != std::string::npos;
  });
}

// Write skew: each transaction reads x and y empty, then appends to one of them; both commit.
std::map<std::int64_t, Operation> write_skew(bool ensured) {
  auto read = [&](const char* key) {
    nlohmann::json micro = {"r", key, nlohmann::json::array()};
    if (ensured) micro.push_back("ensure");
    return micro;
  };
  return {{1, transaction(1, 10, 40, {read("x"), read("y"), {"append", "x", 10}})},
          {2, transaction(2, 20, 50, {read("x"), read("y"), {"append", "y", 20}})}};
}

}  // namespace

TEST_CASE("write skew between transactions that ensure what they read is reported as G2") {
  const auto problems =
      avout::testing::check_list_append(write_skew(true), {{"x", {10}}, {"y", {20}}});
  REQUIRE(problems.size() == 1);
  CHECK(mentions(problems, "G2 (ensured reads): cycle "));
  CHECK(mentions(problems, "rw-ensured(x)"));
  CHECK(mentions(problems, "rw-ensured(y)"));
}

TEST_CASE("write skew between transactions that only deref is allowed under snapshot isolation") {
  CHECK(avout::testing::check_list_append(write_skew(false), {{"x", {10}}, {"y", {20}}}).empty());
}

TEST_CASE("an anti-dependency cycle with one ensured read is reported as G-single, not twice") {
  // 1 ensures x and finds it empty but sees y with 2's append; 2 appended to both.
  std::map<std::int64_t, Operation> operations{
      {1,
       transaction(1, 10, 40, {{"r", "x", nlohmann::json::array(), "ensure"}, {"r", "y", {21}}})},
      {2, transaction(2, 20, 30, {{"append", "x", 20}, {"append", "y", 21}})}};
  const auto problems = avout::testing::check_list_append(operations, {{"x", {20}}, {"y", {21}}});
  REQUIRE(problems.size() == 1);
  CHECK(mentions(problems, "G-single"));
}

TEST_CASE("a lock's counter that lost an acknowledged increment is reported") {
  auto increment = [](std::int64_t id, std::uint64_t token, long count) {
    return Operation{.id = id,
                     .f = "increment",
                     .outcome = "ok",
                     .invoked_ns = id,
                     .completed_ns = id + 1,
                     .argument = {{"lock", "mutex"}, {"token", token}},
                     .result = {{"count", count}}};
  };
  // Two holders at once both read 0 and wrote 1.
  const std::map<std::int64_t, Operation> overlapping{{1, increment(1, 5, 1)},
                                                      {2, increment(2, 6, 1)}};
  const auto problems = avout::testing::check_counters(overlapping, {{"mutex", 1}});
  CHECK(mentions(problems, "two acknowledged increments both wrote 1"));
  CHECK(mentions(problems, "final count 1 but 2 acknowledged"));
  const std::map<std::int64_t, Operation> in_turn{{1, increment(1, 5, 1)}, {2, increment(2, 6, 2)}};
  CHECK(avout::testing::check_counters(in_turn, {{"mutex", 2}}).empty());
}

TEST_CASE("the send of an agent action that failed is reported when it ran") {
  auto operation = [](std::int64_t id, std::string f, std::string outcome, nlohmann::json argument,
                      nlohmann::json result = nullptr) {
    return Operation{.id = id,
                     .f = std::move(f),
                     .outcome = std::move(outcome),
                     .invoked_ns = id * 10,
                     .completed_ns = id * 10 + 5,
                     .argument = std::move(argument),
                     .result = std::move(result)};
  };
  auto action = [&](std::int64_t id, bool failed) {
    return operation(id, "action-send", "ok",
                     {{"agent", "sink"}, {"value", id}, {"failed", failed}});
  };
  auto await = [&](std::int64_t id, const char* agent) {
    return operation(id, "await", "ok", {{"agent", agent}}, true);
  };
  // 1 throws on purpose (5: its note), 2 ran before it and did not fail, 4 came after the
  // restart (3) that cleared 1's error.
  std::map<std::int64_t, Operation> operations{
      {1, action(1, true)},
      {2, action(2, false)},
      {3, operation(3, "agent-restart", "ok", {{"agent", "relay"}, {"failed_by", 1}})},
      {4, action(4, false)},
      {5, operation(5, "action-failed", "ok", {{"value", 1}})},
      {8, await(8, "relay")},
      {9, await(9, "sink")}};
  operations.at(2).invoked_ns = 1;
  operations.at(2).completed_ns = 2;  // before 1 began: never queued behind it
  CHECK(avout::testing::check_agents(operations, {{"sink", {2, 4}}}).empty());

  const auto ran_failed = avout::testing::check_agents(operations, {{"sink", {2, 1, 4}}});
  REQUIRE(ran_failed.size() == 1);
  CHECK(mentions(ran_failed, "agent sink: the send of a failed action ran 1 times"));

  const auto lost = avout::testing::check_agents(operations, {{"sink", {2}}});
  REQUIRE(lost.size() == 1);
  CHECK(mentions(lost, "the send of an action that ran and did not fail never ran"));
  CHECK(mentions(lost, "op 4 "));

  // Queued behind the failing action before its restart: the failed agent may drop it.
  operations.at(4).invoked_ns = 12;
  operations.at(4).completed_ns = 20;
  CHECK(avout::testing::check_agents(operations, {{"sink", {2}}}).empty());

  // An action that threw once may have run again during an outage and kept that run: its
  // note alone does not make its send's run an anomaly.
  operations.emplace(6, action(6, false));
  operations.emplace(7, operation(7, "action-failed", "ok", {{"value", 6}}));
  CHECK(avout::testing::check_agents(operations, {{"sink", {2, 6}}}).empty());
}

namespace {

Operation event(std::int64_t id, std::string f, std::string outcome, nlohmann::json argument,
                nlohmann::json result = nullptr) {
  return Operation{.id = id,
                   .f = std::move(f),
                   .outcome = std::move(outcome),
                   .invoked_ns = id * 10,
                   .completed_ns = id * 10 + 5,
                   .argument = std::move(argument),
                   .result = std::move(result)};
}

Operation send(std::int64_t id, std::string outcome) {
  return event(id, "send", std::move(outcome), {{"agent", "agent"}, {"value", id}, {"thread", 1}});
}

}  // namespace

TEST_CASE("a send that threw Timeout and ran, and a send that ran twice, are reported") {
  std::map<std::int64_t, Operation> operations{
      {1, send(1, "ok")}, {2, send(2, "fail")}, {3, send(3, "info")}};
  CHECK(avout::testing::check_agents(operations, {{"agent", {1, 3}}}).empty());
  CHECK(avout::testing::check_agents(operations, {{"agent", {1}}}).empty());  // nobody vouched
  CHECK(mentions(avout::testing::check_agents(operations, {{"agent", {1, 2}}}),
                 "a send of a failed call ran"));
  CHECK(mentions(avout::testing::check_agents(operations, {{"agent", {1, 1}}}),
                 "acknowledged send 1 ran 2 times"));
  CHECK(mentions(avout::testing::check_agents(operations, {{"agent", {1, 3, 3}}}),
                 "unknown outcome ran 2 times"));
}

TEST_CASE(
    "a process told of dropped sends by an await mid-run vouches for none at its final await") {
  std::map<std::int64_t, Operation> operations{
      {1, send(1, "ok")}, {8, event(8, "await", "ok", {{"agent", "agent"}}, true)}};
  CHECK(mentions(avout::testing::check_agents(operations, {{"agent", {}}}),
                 "acknowledged send 1 ran 0 times"));
  operations.emplace(5, event(5, "await-mid", "info", {{"agent", "agent"}, {"how", 0}},
                              "1 action(s) ... dropped"));
  CHECK(avout::testing::check_agents(operations, {{"agent", {}}}).empty());
}

TEST_CASE(
    "an agent read that failed or saw no value the agent held, and an early await, are reported") {
  std::map<std::int64_t, Operation> operations{
      {1, event(1, "agent-read", "ok", {{"agent", "agent"}}, std::vector<long>{7})},
      {2,
       event(2, "await-mid", "ok", {{"agent", "agent"}}, {{"waited", {7, 8}}, {"seen", {7, 8}}})},
      {3, event(3, "agent-read", "info", {{"agent", "agent"}}, "injected outage")}};
  CHECK(avout::testing::check_agent_reads(operations, {{"agent", {7, 8, 9}}}).empty());
  CHECK(mentions(avout::testing::check_agent_reads(operations, {{"agent", {8, 7}}}),
                 "no value the agent held"));

  operations.at(2).result["seen"] = std::vector<long>{7};
  CHECK(mentions(avout::testing::check_agent_reads(operations, {{"agent", {7, 8}}}),
                 "await returned before send 8, made before the await began, ran"));
  CHECK(avout::testing::check_agent_reads(operations, {{"agent", {7}}})
            .empty());  // 8 never ran: dropped

  operations.at(2).result = {{"waited", {7}}, {"seen", {7}}};
  operations.emplace(4, event(4, "agent-read", "fail", {{"agent", "agent"}},
                              "its value (point p) is missing from its store"));
  CHECK(mentions(avout::testing::check_agent_reads(operations, {{"agent", {7}}}), "1 plain reads"));
}

TEST_CASE("two resets that replaced one value, and values no reset could have set, are reported") {
  auto reset = [](std::int64_t id, std::string outcome, nlohmann::json old) {
    return event(id, "register-reset", std::move(outcome), {{"value", id}},
                 {{"old", std::move(old)}});
  };
  std::map<std::int64_t, Operation> operations{{1, reset(1, "ok", std::vector<long>{})},
                                               {2, reset(2, "ok", std::vector<long>{1})},
                                               {3, reset(3, "fail", nullptr)},
                                               {4, reset(4, "ok", nullptr)}};
  CHECK(avout::testing::check_register(operations, {4}).empty());
  CHECK(mentions(avout::testing::check_register(operations, {3}),
                 "set by no reset that could have landed"));
  operations.at(4).result["old"] = std::vector<long>{1};
  CHECK(mentions(avout::testing::check_register(operations, {4}), "two resets both replaced [1]"));
}

TEST_CASE("a promise broken inline is reported") {
  std::map<std::int64_t, Operation> operations{
      {1, event(1, "contract", "ok", {{"promise", "p"}},
                {{"broken", "lease_lock.hpp unlock"}, {"detail", nullptr}})}};
  CHECK(mentions(avout::testing::check_contracts(operations),
                 "broken promise: lease_lock.hpp unlock"));
  CHECK(avout::testing::check_contracts({}).empty());
}

TEST_CASE(
    "a transaction that met an erased value or was refused at the clock's version is reported, a "
    "connection loss is not") {
  auto failed = [](std::int64_t id, const std::string& message) {
    return Operation{
        .id = id,
        .f = "txn",
        .outcome = "info",
        .invoked_ns = id * 10,
        .completed_ns = id * 10 + 5,
        .argument = nlohmann::json::array({nlohmann::json::array({"append", "x", id})}),
        .result = message};
  };
  const std::map<std::int64_t, Operation> operations{
      {1, failed(1, "value of ref /r/x at 0300-ab missing from its store (redis)")},
      {2, failed(2,
                 "zookeeper node /avout/stm/clock: its version -2147483648 has wrapped past 2^31 "
                 "updates")},
      {3, failed(3, "zookeeper exists /avout/stm/clock: connection loss")}};
  const auto problems = avout::testing::check_list_append(operations, {{"x", {}}});
  REQUIRE(problems.size() == 2);
  CHECK(mentions(problems, "erased: a transaction read a value missing from its store"));
  CHECK(mentions(problems, "clock: a transaction failed at the clock's version"));
}

TEST_CASE("a claim left after its process's dosyncs ended is reported") {
  using namespace std::chrono_literals;
  CHECK(avout::testing::check_claims({}, 10000ms).empty());
  const auto problems = avout::testing::check_claims(
      {{.ref = "r1", .process = 3, .session = 77, .first_read_point = 5, .counter = 6}}, 10000ms);
  REQUIRE(problems.size() == 1);
  CHECK(mentions(problems,
                 "claim outlived its dosync: r1 still claimed 10000 ms after every dosync of "
                 "process 3 ended"));
}
