#include "queue/hold_rule.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace avout::detail {

HoldRule::HoldRule(std::size_t holders, std::string writer_kind)
    : holders_(holders), writer_kind_(std::move(writer_kind)) {}

HoldRule HoldRule::first(std::size_t holders) {
  if (holders == 0) throw std::invalid_argument("HoldRule::first: at least one holder");
  return HoldRule(holders, {});
}

HoldRule HoldRule::no_writer_ahead(std::string writer_kind) {
  return HoldRule(0, std::move(writer_kind) + "-");
}

Turn HoldRule::turn(const std::vector<std::string>& line, std::size_t mine) const {
  if (mine > line.size()) throw std::out_of_range("HoldRule::turn: not a place in the line");
  if (holders_ > 0) {
    if (mine < holders_) return Turn{true, {}};
    const auto window_end = line.begin() + static_cast<std::ptrdiff_t>(mine);
    const auto window_begin = window_end - static_cast<std::ptrdiff_t>(holders_);
    return Turn{false, std::vector<std::string>(window_begin, window_end)};
  }
  for (std::size_t ahead = mine; ahead > 0; --ahead) {
    if (line[ahead - 1].starts_with(writer_kind_)) return Turn{false, {line[ahead - 1]}};
  }
  return Turn{true, {}};
}

Turn turn_among(std::vector<std::string> children, const std::string& own, const NodeKind& kind,
                const HoldRule& rule) {
  const auto line = in_queue_order(std::move(children), kind);
  const auto mine = own.empty() ? line.end() : std::find(line.begin(), line.end(), own);
  if (!own.empty() && mine == line.end()) return Turn{false, {}, true};
  return rule.turn(line, static_cast<std::size_t>(mine - line.begin()));
}

}  // namespace avout::detail
