#pragma once
// Time the calling thread spent in nanosleep (std::this_thread::sleep_for): the retry loop's
// back-off and barging waits, seen from outside the library. avout-bench defines nanosleep
// itself (bench/sleep_tally.cpp), timing each call before handing it to the C library.

#include <cstdint>

namespace avout::bench {

/// Nanoseconds this thread has slept in nanosleep since it started.
std::uint64_t slept_ns();

}  // namespace avout::bench
