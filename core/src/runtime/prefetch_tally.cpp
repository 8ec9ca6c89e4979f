#include "runtime/prefetch_tally.hpp"

#include <atomic>

namespace avout::detail {

namespace {
std::atomic<std::uint64_t> made{0};
std::atomic<std::uint64_t> used{0};
std::atomic<std::uint64_t> wasted{0};
}  // namespace

void count_prefetch_made() { made.fetch_add(1, std::memory_order_relaxed); }
void count_prefetch_used() { used.fetch_add(1, std::memory_order_relaxed); }
void count_prefetch_wasted() { wasted.fetch_add(1, std::memory_order_relaxed); }

PrefetchTally prefetch_tally() {
  return {made.load(std::memory_order_relaxed), used.load(std::memory_order_relaxed),
          wasted.load(std::memory_order_relaxed)};
}

}  // namespace avout::detail
