#include "stm/speculation_gate.hpp"

#include <algorithm>

namespace avout::detail {

bool SpeculationGate::try_enter() {
  std::lock_guard lock(mutex_);
  if (skip_ == 0) return true;
  --skip_;
  return false;
}

void SpeculationGate::landed() {
  std::lock_guard lock(mutex_);
  penalty_ = 0;
}

void SpeculationGate::failed() {
  std::lock_guard lock(mutex_);
  penalty_ = std::min(longest_penalty, std::max<std::uint32_t>(1, 2 * penalty_));
  skip_ = penalty_;
}

}  // namespace avout::detail
