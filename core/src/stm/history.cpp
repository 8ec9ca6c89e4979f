#include "stm/history.hpp"

#include <algorithm>

namespace avout::detail {

std::uint32_t history_to_keep(std::uint32_t kept, std::size_t misses_here,
                              std::int32_t head_cversion, std::size_t min_history,
                              std::size_t max_history) {
  // Misses grow what is kept, those of every process (a reported miss creates and removes a
  // child of the head: 2 on its child version) and this process's own.
  const std::size_t misses =
      std::max<std::size_t>(misses_here, static_cast<std::size_t>(std::max(head_cversion, 0)) / 2);
  return static_cast<std::uint32_t>(
      std::min<std::size_t>(max_history, std::max<std::size_t>(kept, min_history + misses)));
}

HeadRecord next_head(const HeadRecord& head, std::int64_t head_mzxid, const Point& point,
                     std::uint32_t keep, std::vector<Point>& trimmed) {
  HeadRecord next;
  next.keep = keep;
  next.newest = point;
  next.history.push_back(HeadEntry{head_mzxid, head.newest});
  for (const auto& older : head.history) next.history.push_back(older);
  while (next.history.size() > next.keep) {
    trimmed.push_back(next.history.back().point);
    next.history.pop_back();
  }
  return next;
}

}  // namespace avout::detail
