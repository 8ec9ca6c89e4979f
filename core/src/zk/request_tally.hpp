#pragma once
// The requests every ZooKeeper session of this process sent, by kind, and the multis that
// failed: a benchmark's breakdown of what an operation costs the server (avout-bench reads it;
// nothing in the library does). Process-wide relaxed counters: one increment per request, no
// lock, no change to what is sent.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace avout::detail {

/// What a request asks of the server. `rearm` is the exists a persistent watch sends to arm
/// itself again; every other kind is also counted in SessionStatistics::requests.
enum class RequestKind : std::size_t {
  get,
  exists,
  set,
  create,
  remove,
  children,
  multi,
  sync,
  rearm
};

/// How many kinds RequestKind has.
inline constexpr std::size_t request_kinds = 9;

/// The kinds' names in RequestKind order: "get", "exists", ..., "rearm".
inline constexpr std::array<std::string_view, request_kinds> request_kind_names{
    "get", "exists", "set", "create", "delete", "children", "multi", "sync", "rearm"};

/// The counts so far.
struct RequestTally {
  std::array<std::uint64_t, request_kinds> sent{};  ///< requests sent, by RequestKind
  std::uint64_t multis_failed = 0;  ///< multis answered with a failing operation (not committed)
};

/// Counts one request of `kind` (called as it is handed to the C client).
void count_request(RequestKind kind);

/// Counts one multi the server refused because an operation failed.
void count_failed_multi();

/// The counts of this process so far.
RequestTally request_tally();

}  // namespace avout::detail
