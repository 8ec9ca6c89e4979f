#pragma once
// Adaptive history (Clojure's min-history/max-history, docs/transactions.md): how many older
// versions a commit keeps in a ref's head, and the head it writes. Pure: tested without a
// server (tests/stm_unit_test.cpp).

#include "records/stm_records.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace avout::detail {

/// How many older versions a commit keeps: what the head kept (`kept`), at least
/// `min_history` plus the history misses seen (this process's `misses_here`, or every
/// process's, reported as half the head's child version `head_cversion`, whichever is more),
/// at most `max_history`.
std::uint32_t history_to_keep(std::uint32_t kept, std::size_t misses_here,
                              std::int32_t head_cversion, std::size_t min_history,
                              std::size_t max_history);

/// The head a commit writes over `head` (committed at `head_mzxid`): `point` is the newest,
/// the old newest heads the history, which keeps `keep` older versions. The points trimmed
/// off go to `trimmed`, oldest first.
HeadRecord next_head(const HeadRecord& head, std::int64_t head_mzxid, const Point& point,
                     std::uint32_t keep, std::vector<Point>& trimmed);

}  // namespace avout::detail
