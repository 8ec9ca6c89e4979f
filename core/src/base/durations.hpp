#pragma once
// The one check of a duration option that must be positive.

#include <avout/errors.hpp>

#include <chrono>
#include <string>

namespace avout::detail {

/// Throws InvalidDuration ("WHAT must be positive, got N ms") unless `duration` is positive.
inline void require_positive(std::chrono::milliseconds duration, const std::string& what) {
  if (duration <= std::chrono::milliseconds::zero()) {
    throw InvalidDuration(what + " must be positive, got " + std::to_string(duration.count()) +
                          " ms");
  }
}

}  // namespace avout::detail
