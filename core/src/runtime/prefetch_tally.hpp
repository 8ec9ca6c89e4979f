#pragma once
// What became of the heads a transaction read ahead for the next attempt (V6: after a failed
// multi or a view that changed, or on a watch event on a head a live attempt read): used when
// a later lookup found the read, wasted when the node cache dropped or replaced it first. A
// benchmark's breakdown (avout-bench reads it; nothing in the library does), as
// zk/request_tally.hpp is: process-wide relaxed counters.

#include <cstdint>

namespace avout::detail {

/// The counts so far.
struct PrefetchTally {
  std::uint64_t made = 0;    ///< heads read ahead
  std::uint64_t used = 0;    ///< of those, found by a later lookup
  std::uint64_t wasted = 0;  ///< of those, dropped or replaced before any lookup
};

/// Counts one head read ahead.
void count_prefetch_made();
/// Counts one head read ahead that a lookup found.
void count_prefetch_used();
/// Counts one head read ahead that went unread.
void count_prefetch_wasted();

/// The counts of this process so far.
PrefetchTally prefetch_tally();

}  // namespace avout::detail
