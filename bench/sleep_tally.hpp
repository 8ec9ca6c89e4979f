#pragma once
// Time the calling thread spent in nanosleep (std::this_thread::sleep_for) and in timed
// condition waits (Deadline::sleep_for): the retry loops' back-off and barging waits, seen
// from outside the library. avout-bench defines both C functions itself
// (bench/sleep_tally.cpp), timing each call before handing it to the C library.

#include <cstdint>

namespace avout::bench {

/// Nanoseconds this thread has slept (nanosleep, timed condition waits) since it started.
std::uint64_t slept_ns();

}  // namespace avout::bench
