// The pure helpers of core/src/base as functions over plain data, no server: the one back-off
// (growth, cap, jitter bounds, the deadline cutting it short) and the hex formatter.
#include "base/back_off.hpp"
#include "base/hex.hpp"

#include <avout/errors.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <set>
#include <stop_token>
#include <vector>

namespace {

using avout::detail::back_off_pause;
using avout::detail::BackOff;
using std::chrono::microseconds;

// The pauses back_off_pause gives for `attempt` over many draws.
std::vector<microseconds> draws(std::size_t attempt, const BackOff& policy, int count = 2000) {
  std::vector<microseconds> out;
  for (int i = 0; i < count; ++i) out.push_back(back_off_pause(attempt, policy));
  return out;
}

// Every draw of `attempt` lies in [d/2, d) for d = `ceiling`.
void check_within(std::size_t attempt, const BackOff& policy, microseconds ceiling) {
  CAPTURE(attempt);
  for (const auto pause : draws(attempt, policy)) {
    CHECK(pause >= ceiling / 2);
    CHECK(pause < ceiling);
  }
}

}  // namespace

TEST_CASE("back-off: the pause doubles per attempt from `first`, jittered into [d/2, d)") {
  const BackOff policy{microseconds(1000), microseconds(64000)};
  for (std::size_t attempt = 0; attempt <= 6; ++attempt) {
    check_within(attempt, policy, microseconds(1000) * (1 << attempt));
  }
}

TEST_CASE("back-off: the pause stops growing at the cap, however many attempts") {
  const BackOff policy{microseconds(1000), microseconds(50000)};
  check_within(6, policy, microseconds(50000));  // 64 ms capped to 50
  check_within(1000, policy, microseconds(50000));
  check_within(std::numeric_limits<std::size_t>::max(), policy, microseconds(50000));
}

TEST_CASE("back-off: the defaults and the outage pauses") {
  check_within(0, BackOff{}, microseconds(1000));
  check_within(100, BackOff{}, microseconds(50000));
  check_within(0, avout::detail::outage_pauses, std::chrono::milliseconds(25));
  check_within(100, avout::detail::outage_pauses, std::chrono::milliseconds(500));
}

TEST_CASE("back-off: the jitter spreads contending processes apart") {
  const auto pauses = draws(3, BackOff{microseconds(1000), microseconds(50000)});
  const std::set<microseconds> distinct(pauses.begin(), pauses.end());
  CHECK(distinct.size() > 100);  // of 4000 possible values; all equal would mean no jitter
}

TEST_CASE("back-off: a pause is never zero, even for a zero policy") {
  for (const auto pause : draws(0, BackOff{microseconds(0), microseconds(0)}, 100)) {
    CHECK(pause == microseconds(1));
  }
  for (const auto pause : draws(5, BackOff{microseconds(1), microseconds(1)}, 100)) {
    CHECK(pause == microseconds(1));
  }
}

TEST_CASE("back-off: waiting past the deadline or after a stop says so") {
  const BackOff tiny{microseconds(1), microseconds(1)};
  CHECK(avout::detail::back_off(0, avout::Deadline{}, tiny));
  CHECK_FALSE(avout::detail::back_off(0, avout::Deadline::after(std::chrono::seconds(-1)), tiny));
  std::stop_source stop;
  stop.request_stop();
  CHECK_FALSE(avout::detail::back_off(0, avout::Deadline(stop.get_token()), BackOff{}));
}

TEST_CASE("hex: numbers zero-padded to the digits asked, lowercase") {
  using avout::detail::hex;
  CHECK(hex(0) == "0000000000000000");
  CHECK(hex(0xdeadbeef, 8) == "deadbeef");
  CHECK(hex(0xabc, 6) == "000abc");
  CHECK(hex(std::numeric_limits<std::uint64_t>::max()) == "ffffffffffffffff");
  CHECK(hex(0x1234, 2) == "34");  // too few digits keep the low ones
  CHECK(hex(7, 0).empty());
}

TEST_CASE("hex: bytes two digits each, no prefix") {
  using avout::detail::hex;
  const std::vector<std::uint8_t> bytes{0x00, 0x0f, 0xa0, 0xff};
  CHECK(hex(std::span<const std::uint8_t>(bytes)) == "000fa0ff");
  CHECK(hex(std::span<const std::uint8_t>()).empty());
}

TEST_CASE("hex: session ids as liveness nodes spell them, negative ones too") {
  using avout::detail::session_hex;
  CHECK(session_hex(0x1234) == "0000000000001234");
  CHECK(session_hex(-1) == "ffffffffffffffff");
  CHECK(session_hex(std::numeric_limits<std::int64_t>::min()) == "8000000000000000");
  CHECK(session_hex(0).size() == avout::detail::session_hex_digits);
}

TEST_CASE("errors: a handler retrying on ConnectionLoss never catches OutcomeUnknown") {
  // The generic "retry on ConnectionLoss" would run again a write that may have landed.
  const auto caught_as_loss = [] {
    try {
      throw avout::OutcomeUnknown("a commit's reply was lost");
    } catch (const avout::ConnectionLoss&) {
      return true;
    } catch (const avout::Error&) {
      return false;
    }
  };
  CHECK_FALSE(caught_as_loss());
}
