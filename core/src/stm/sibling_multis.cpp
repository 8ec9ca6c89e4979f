#include "stm/sibling_multis.hpp"

#include <algorithm>

namespace avout::detail {

bool SiblingMultis::claim(const std::vector<Key>& keys, const Deadline& deadline) {
  std::unique_lock lock(mutex_);
  bool waited = false;
  auto busy = [&] {
    return std::any_of(keys.begin(), keys.end(),
                       [&](const Key& key) { return expected_.contains(key); });
  };
  while (busy()) {
    waited = true;
    if (deadline.expired()) deadline.expire("dosync: waiting for a sibling thread's commit");
    // Woken by every release; a stop request is seen at the next short wake-up.
    released_.wait_until(lock, std::min(deadline.time_or_far(),
                                        Deadline::Clock::now() + std::chrono::milliseconds(50)));
  }
  expected_.insert(keys.begin(), keys.end());
  return waited;
}

void SiblingMultis::release(const std::vector<Key>& keys) {
  {
    std::lock_guard lock(mutex_);
    for (const auto& key : keys) expected_.erase(key);
  }
  released_.notify_all();
}

bool SiblingClaim::claim(std::vector<SiblingMultis::Key> keys, const Deadline& deadline) {
  release();
  const bool waited = multis_.claim(keys, deadline);
  keys_ = std::move(keys);
  return waited;
}

void SiblingClaim::release() {
  if (keys_.empty()) return;
  multis_.release(keys_);
  keys_.clear();
}

}  // namespace avout::detail
