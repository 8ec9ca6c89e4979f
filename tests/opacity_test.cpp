// Opacity (validated attempts, issue 40 item 3): every attempt of a transfer, aborted ones
// included, sees a consistent total, in both isolation modes: a bank of 10 accounts over
// ZooKeeper, Redis and PostgreSQL with threads of 3 processes, and 8 sibling threads of one
// client among 4 accounts (their own commits supersede the heads each other read). The
// workload is support/opacity_bank.hpp; opacity_fault_test stalls the completion thread.
#include "support/opacity_bank.hpp"

#include <doctest/doctest.h>

using namespace std::chrono_literals;
using avout::testing::OpacityRun;
using avout::testing::run_opacity_bank;

namespace {

void check_consistent(const avout::testing::OpacitySeen& seen, long total) {
  CHECK(seen.attempts > 0);
  CHECK(seen.inconsistent == 0);
  CHECK(seen.errors == 0);
  CHECK(seen.final_total == total);
}

}  // namespace

TEST_CASE("default mode: every attempt of 3 processes sees the bank's total") {
  check_consistent(run_opacity_bank<10>({}), 10 * avout::testing::opacity_initial);
}

TEST_CASE("snapshot mode: every attempt of 3 processes sees the bank's total") {
  check_consistent(run_opacity_bank<10>({.isolation = avout::Isolation::snapshot}),
                   10 * avout::testing::opacity_initial);
}

TEST_CASE("default mode: 8 sibling threads of one client see the total across their commits") {
  check_consistent(run_opacity_bank<4>({.processes = 1, .threads = 8, .length = 3000ms}),
                   4 * avout::testing::opacity_initial);
}

TEST_CASE("snapshot mode: 8 sibling threads of one client see the total across their commits") {
  check_consistent(run_opacity_bank<4>({.processes = 1,
                                        .threads = 8,
                                        .length = 3000ms,
                                        .isolation = avout::Isolation::snapshot}),
                   4 * avout::testing::opacity_initial);
}
