// Opacity with the client's completion thread stalled (validated attempts, issue 40 item 3): the
// opacity workload (support/opacity_bank.hpp) while each process's FaultPlan delays 30% of
// its ZooKeeper replies and of its watch events by up to 40 ms (support/zookeeper_faults.hpp
// `delay`, `event_delay`: the client's completion thread sleeps before handing them on, so
// every later reply and event waits behind them, in the order the server sent them). No other
// fault: every dosync must still succeed, and every attempt, aborted ones included, must see the
// bank's total, in both isolation modes; also among 8 sibling threads of one client.
#include "support/opacity_bank.hpp"

#include <doctest/doctest.h>

using namespace std::chrono_literals;
using avout::testing::OpacityRun;
using avout::testing::run_opacity_bank;

namespace {

const avout::testing::ZooKeeperFaultRates stalls{
    .delay = 0.3, .max_delay = 40ms, .event_delay = 0.3};

void check_consistent(const avout::testing::OpacitySeen& seen, long accounts = 10) {
  CHECK(seen.attempts > 0);
  CHECK(seen.inconsistent == 0);
  CHECK(seen.errors == 0);
  CHECK(seen.final_total == accounts * avout::testing::opacity_initial);
}

}  // namespace

TEST_CASE("default mode: with replies delayed every attempt sees the bank's total") {
  check_consistent(run_opacity_bank<10>({.processes = 2, .threads = 4, .faults = stalls}));
}

TEST_CASE("snapshot mode: with replies delayed every attempt sees the bank's total") {
  check_consistent(run_opacity_bank<10>(
      {.processes = 2, .threads = 4, .isolation = avout::Isolation::snapshot, .faults = stalls}));
}

TEST_CASE(
    "default mode: 8 sibling threads with replies delayed see the total across their commits") {
  check_consistent(
      run_opacity_bank<4>({.processes = 1, .threads = 8, .length = 3000ms, .faults = stalls}), 4);
}
