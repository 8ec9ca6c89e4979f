#include "base/back_off.hpp"

#include <algorithm>
#include <random>

namespace avout::detail {

std::chrono::microseconds back_off_pause(std::size_t attempt, const BackOff& policy) {
  thread_local std::minstd_rand random{std::random_device{}()};
  auto pause = policy.first;
  for (std::size_t i = 0; i < attempt && pause < policy.cap; ++i) pause *= 2;
  pause = std::min(pause, policy.cap);
  const auto half = std::max<std::int64_t>(1, pause.count() / 2);
  return std::chrono::microseconds(half + static_cast<std::int64_t>(random() % half));
}

bool back_off(std::size_t attempt, const Deadline& deadline, const BackOff& policy) {
  return deadline.sleep_for(back_off_pause(attempt, policy));
}

}  // namespace avout::detail
