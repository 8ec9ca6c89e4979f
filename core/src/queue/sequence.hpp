#pragma once
// The sequence number ZooKeeper appends to a sequential node's name: its parent's child
// counter, a signed 32-bit int printed with "%010d". It wraps after 2^31 changes of the
// folder's children, to -2147483648 (11 characters) and on through -000000001 to 0000000000
// (item 10 of issue 35), so neither the text nor the number orders nodes across the wrap:
// order is by distance modulo 2^32 (serial number arithmetic). Used by locks, agents and
// the queue engine (queue/queue_names.hpp, whose sequence_of is the one parse of a name).

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

namespace avout::detail {

// The number `suffix` (exactly what ZooKeeper appended) shows; nullopt for anything else.
inline std::optional<std::int32_t> parse_sequence(std::string_view suffix) {
  if (suffix.size() < 10 || suffix.size() > 11) return std::nullopt;
  std::int32_t value = 0;
  const auto* end = suffix.data() + suffix.size();
  const auto [stop, error] = std::from_chars(suffix.data(), end, value);
  if (error != std::errc{} || stop != end) return std::nullopt;
  return value;
}

// The sequence of a node named "<prefix>-<sequence>" whose prefix does not end with '-':
// after the last '-', or from it when it is the sign of a negative sequence ("x--000000005").
inline std::optional<std::int32_t> sequence_after_dash(std::string_view name) {
  auto dash = name.rfind('-');
  if (dash == std::string_view::npos || dash == 0) return std::nullopt;
  if (name[dash - 1] != '-') ++dash;
  return parse_sequence(name.substr(dash));
}

// Whether `a` was appended before `b`: right while the live nodes of a folder span less than
// 2^31 of its counter, i.e. none of them has lived through two billion changes of the
// folder's children. A strict weak order on such a set, so fit for sorting and map keys.
struct SequenceOrder {
  bool operator()(std::int32_t a, std::int32_t b) const {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) -
                                     static_cast<std::uint32_t>(b)) < 0;
  }
};

}  // namespace avout::detail
