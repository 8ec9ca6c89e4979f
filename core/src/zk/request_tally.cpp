#include "zk/request_tally.hpp"

#include <atomic>

namespace avout::detail {

namespace {
std::array<std::atomic<std::uint64_t>, request_kinds> sent{};
std::atomic<std::uint64_t> multis_failed{0};
}  // namespace

void count_request(RequestKind kind) {
  sent[static_cast<std::size_t>(kind)].fetch_add(1, std::memory_order_relaxed);
}

void count_failed_multi() { multis_failed.fetch_add(1, std::memory_order_relaxed); }

RequestTally request_tally() {
  RequestTally tally;
  for (std::size_t i = 0; i < request_kinds; ++i)
    tally.sent[i] = sent[i].load(std::memory_order_relaxed);
  tally.multis_failed = multis_failed.load(std::memory_order_relaxed);
  return tally;
}

}  // namespace avout::detail
