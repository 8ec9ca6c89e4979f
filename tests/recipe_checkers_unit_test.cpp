// The checkers of support/recipe_checkers.hpp judged on histories built by hand: each anomaly
// they exist to find is found, and the same shape without it passes (the randomized recipe
// workload runs them on real histories; these show they can fail).
#include "support/recipe_checkers.hpp"

#include <doctest/doctest.h>

#include <algorithm>

namespace {

using avout::testing::Operation;
using Operations = std::map<std::int64_t, Operation>;

void add(Operations& operations, std::int64_t id, const std::string& f, std::int64_t invoked,
         std::int64_t completed, nlohmann::json argument, nlohmann::json result = nullptr,
         const std::string& outcome = "ok") {
  operations[id] = Operation{.id = id,
                             .f = f,
                             .outcome = outcome,
                             .invoked_ns = invoked,
                             .completed_ns = completed,
                             .argument = std::move(argument),
                             .result = std::move(result)};
}

bool mentions(const std::vector<std::string>& problems, const std::string& what) {
  return std::any_of(problems.begin(), problems.end(), [&](const std::string& problem) {
    return problem.find(what) != std::string::npos;
  });
}

// Three grants of a 2-permit semaphore; each confirmed held at `confirmed[i]`.
Operations permits(std::int64_t first_confirmed) {
  Operations operations;
  const nlohmann::json sem = {{"sem", "s"}, {"n", 2}};
  add(operations, 1, "acquire", 0, 10, sem, {{"token", 100}});
  add(operations, 2, "acquire", 0, 20, sem, {{"token", 101}});
  add(operations, 3, "acquire", 30, 40, sem, {{"token", 102}});
  add(operations, 4, "permit-held", first_confirmed, first_confirmed + 1,
      {{"sem", "s"}, {"token", 100}}, true);
  add(operations, 5, "permit-commit", 60, 70, {{"sem", "s"}, {"token", 101}});
  add(operations, 6, "permit-held", 80, 81, {{"sem", "s"}, {"token", 102}}, true);
  return operations;
}

}  // namespace

TEST_CASE("permits: three surely held at once of two are reported; two are not") {
  const auto three = avout::testing::check_permits(permits(50), {{"s", {5}}});
  CHECK(mentions(three, "3 holds at once (at most 2)"));
  // The first holder's last confirmation came before the third was granted: two at most.
  CHECK(avout::testing::check_permits(permits(35), {{"s", {5}}}).empty());
}

TEST_CASE("permits: a frozen holder's hold ends at its last confirmation, not at its loss") {
  auto operations = permits(35);
  // It woke and learned of the loss long after the third was granted: no overlap counted.
  add(operations, 7, "permit-held", 200, 201, {{"sem", "s"}, {"token", 100}}, false);
  CHECK(avout::testing::check_permits(operations, {{"s", {5}}}).empty());
  // Believing it held once it runs again, while the third holds, is reported.
  add(operations, 8, "permit-held", 60, 61, {{"sem", "s"}, {"token", 100}}, true);
  CHECK(mentions(avout::testing::check_permits(operations, {{"s", {5}}}), "3 holds at once"));
}

TEST_CASE("permits: a token granted twice, or smaller than one granted before, is reported") {
  auto operations = permits(35);
  add(operations, 9, "acquire", 100, 110, {{"sem", "s"}, {"n", 2}}, {{"token", 99}});
  CHECK(
      mentions(avout::testing::check_permits(operations, {{"s", {5}}}), "granted before it began"));
  add(operations, 9, "acquire", 100, 110, {{"sem", "s"}, {"n", 2}}, {{"token", 101}});
  CHECK(mentions(avout::testing::check_permits(operations, {{"s", {5}}}), "granted twice"));
}

namespace {

// Two leaderships one after the other, each with a guarded commit in the ledger.
Operations leaderships() {
  Operations operations;
  add(operations, 1, "campaign", 0, 10, {{"candidate", "a"}}, {{"token", 7}});
  add(operations, 2, "leader-commit", 20, 30, {{"token", 7}});
  add(operations, 3, "leading", 31, 32, {{"token", 7}}, true);
  add(operations, 4, "campaign", 5, 50, {{"candidate", "b"}}, {{"token", 9}});
  add(operations, 5, "leader-commit", 60, 70, {{"token", 9}});
  add(operations, 6, "leader-read", 21, 29, nlohmann::json::object(), "a");
  return operations;
}

}  // namespace

TEST_CASE("leaders: the same shape without an anomaly passes") {
  CHECK(avout::testing::check_leaders(leaderships(), {2, 5}).empty());
}

TEST_CASE("leaders: two at once, a decreasing ledger and a late guarded commit are reported") {
  auto operations = leaderships();
  add(operations, 3, "leading", 55, 56, {{"token", 7}}, true);  // a still leads when b does
  CHECK(mentions(avout::testing::check_leaders(operations, {2, 5}), "2 holds at once"));
  CHECK(mentions(avout::testing::check_leaders(leaderships(), {5, 2}),
                 "landed before commits of 1 smaller"));
  operations = leaderships();
  add(operations, 2, "leader-commit", 52, 58, {{"token", 7}});  // a deposed leader's commit
  CHECK(mentions(avout::testing::check_leaders(operations, {5, 2}), "was granted"));
}

TEST_CASE("leaders: a lost or failed commit in the ledger, tokens out of order, a wrong read") {
  CHECK(mentions(avout::testing::check_leaders(leaderships(), {2}), "in the ledger 0 times"));
  auto operations = leaderships();
  add(operations, 5, "leader-commit", 60, 70, {{"token", 9}}, nullptr, "fail");
  CHECK(mentions(avout::testing::check_leaders(operations, {2, 5}), "in the ledger 1 times"));
  operations = leaderships();
  add(operations, 4, "campaign", 15, 50, {{"candidate", "b"}}, {{"token", 6}});
  CHECK(mentions(avout::testing::check_leaders(operations, {2}), "granted before it began"));
  operations = leaderships();
  add(operations, 6, "leader-read", 21, 29, nlohmann::json::object(), "b");
  CHECK(mentions(avout::testing::check_leaders(operations, {2, 5}), "surely led"));
}

TEST_CASE("barriers: an enter that returned before N could have entered is reported") {
  Operations operations;
  const nlohmann::json b = {{"barrier", "b"}, {"n", 3}};
  add(operations, 1, "enter", 0, 50, b);
  add(operations, 2, "enter", 10, 50, b);
  add(operations, 3, "enter", 40, 50, b);
  CHECK(avout::testing::check_barriers(operations).empty());
  // The third arrived only after the others had returned: they passed early.
  add(operations, 3, "enter", 60, 70, b, nullptr, "fail");
  CHECK(mentions(avout::testing::check_barriers(operations), "2 participants"));
  // One that had left before the second was invoked was of an earlier round for it.
  add(operations, 3, "enter", 0, 1, b);
  add(operations, 4, "leave", 2, 3, {{"barrier", "b"}, {"attempt", 3}});
  CHECK(mentions(avout::testing::check_barriers(operations), "3 needed"));
}

TEST_CASE("work queue: items taken twice, never taken, never put, or of failed puts") {
  Operations operations;
  add(operations, 1, "put", 0, 1, {{"item", 1}});
  add(operations, 2, "put", 0, 1, {{"item", 2}});
  add(operations, 3, "put", 0, 1, {{"item", 3}}, nullptr, "fail");
  add(operations, 4, "put", 0, 1, {{"item", 4}}, nullptr, "info");
  add(operations, 5, "take", 2, 3, {{"ledger", "x"}}, 1);
  CHECK(avout::testing::check_work_queue(operations, {{"x", {1}}, {"y", {2}}}).empty());
  const auto problems =
      avout::testing::check_work_queue(operations, {{"x", {1, 3, 5}}, {"y", {1}}});
  CHECK(mentions(problems, "item 1 taken by 2"));
  CHECK(mentions(problems, "item 2 of committed put op 2 was never taken"));
  CHECK(mentions(problems, "item 3 of failed put"));
  CHECK(mentions(problems, "item 5 was never put"));
  CHECK(mentions(avout::testing::check_work_queue(operations, {{"x", {}}, {"y", {1, 2}}}),
                 "not in its ledger x"));
}

TEST_CASE("permits: a ledger with a lost or failed commit, or more than N alive, is reported") {
  auto operations = permits(35);
  CHECK(mentions(avout::testing::check_permits(operations, {{"s", {}}}), "in the ledger 0 times"));
  add(operations, 10, "permit-commit", 90, 95, {{"sem", "s"}, {"token", 100}}, nullptr, "fail");
  CHECK(mentions(avout::testing::check_permits(operations, {{"s", {5, 10}}}),
                 "in the ledger 1 times"));
  // Commits of 102, then 101, then 100: three permits alive at 102's commit, of two.
  operations = permits(35);
  add(operations, 10, "permit-commit", 90, 95, {{"sem", "s"}, {"token", 102}});
  add(operations, 11, "permit-commit", 90, 95, {{"sem", "s"}, {"token", 100}});
  CHECK(mentions(avout::testing::check_permits(operations, {{"s", {10, 5, 11}}}),
                 "more than 2 alive at once"));
  CHECK(
      !mentions(avout::testing::check_permits(operations, {{"s", {11, 10, 5}}}), "alive at once"));
}

TEST_CASE("permits: a check after an injected expiry of its process confirms nothing") {
  auto operations = permits(35);
  // The third permit is process 1's (ids from 1000000 on).
  operations.erase(3);
  operations.erase(6);
  add(operations, 1000003, "acquire", 30, 40, {{"sem", "s"}, {"n", 2}}, {{"token", 102}});
  add(operations, 1000006, "permit-held", 80, 81, {{"sem", "s"}, {"token", 102}}, true);
  add(operations, 8, "permit-held", 60, 61, {{"sem", "s"}, {"token", 100}}, true);
  CHECK(mentions(avout::testing::check_permits(operations, {{"s", {5}}}), "3 holds at once"));
  // Process 0 (ids below 1000000) had its session ended from outside after 36.
  add(operations, 9, "expiry", 37, 37, {{"after_ns", 36}});
  CHECK(avout::testing::check_permits(operations, {{"s", {5}}}).empty());
  // A guarded commit after it is checked by the server: it still counts.
  add(operations, 10, "permit-commit", 60, 65, {{"sem", "s"}, {"token", 100}});
  CHECK(mentions(avout::testing::check_permits(operations, {{"s", {5, 10}}}), "3 holds at once"));
}

TEST_CASE("barriers: a leave that returned before the others of its round left is reported") {
  Operations operations;
  const nlohmann::json b = {{"barrier", "b"}, {"n", 2}};
  add(operations, 1, "enter", 0, 50, b);
  add(operations, 2, "enter", 10, 50, b);
  add(operations, 3, "leave", 60, 90, {{"barrier", "b"}, {"n", 2}, {"attempt", 1}});
  add(operations, 4, "leave", 80, 90, {{"barrier", "b"}, {"n", 2}, {"attempt", 2}});
  CHECK(avout::testing::check_barriers(operations).empty());
  add(operations, 4, "leave", 95, 99, {{"barrier", "b"}, {"n", 2}, {"attempt", 2}});
  CHECK(mentions(avout::testing::check_barriers(operations), "leave op 3 returned with 1"));
}
