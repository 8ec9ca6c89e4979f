#pragma once
// The one back-off of avout's retry loops (atom compare-and-set, dosync, lock and atom
// reply resolution): jittered exponential pauses, bounded by the caller's deadline.

#include <avout/deadline.hpp>

#include <chrono>
#include <cstddef>

namespace avout::detail {

/// How a retry loop's pauses grow: `first` doubles per attempt up to `cap`.
struct BackOff {
  std::chrono::microseconds first{1000};  ///< the pause after attempt 0
  std::chrono::microseconds cap{50000};   ///< the longest pause
};

/// Waits for ZooKeeper or a store to answer again: 25 ms growing to half a second.
inline constexpr BackOff outage_pauses{std::chrono::milliseconds(25),
                                       std::chrono::milliseconds(500)};

/// The pause after `attempt` (0-based): d = min(cap, first * 2^attempt), then a random
/// point of [d/2, d) so that contending processes drift apart instead of colliding again.
std::chrono::microseconds back_off_pause(std::size_t attempt, const BackOff& policy);

/// Sleeps back_off_pause(attempt, policy), cut short by `deadline` (and woken by its stop
/// token); false when the deadline expired.
bool back_off(std::size_t attempt, const Deadline& deadline, const BackOff& policy = {});

}  // namespace avout::detail
