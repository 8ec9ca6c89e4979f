#include "queue/hold_rule.hpp"

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
    const auto window = line.begin() + static_cast<std::ptrdiff_t>(mine);
    return Turn{false, std::vector<std::string>(window - static_cast<std::ptrdiff_t>(holders_), window)};
  }
  for (std::size_t ahead = mine; ahead > 0; --ahead) {
    if (line[ahead - 1].starts_with(writer_kind_)) return Turn{false, {line[ahead - 1]}};
  }
  return Turn{true, {}};
}

}  // namespace avout::detail
