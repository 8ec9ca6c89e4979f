#include "pending_markers.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <future>
#include <utility>

namespace avout::detail {

PendingMarkers::~PendingMarkers() {
  std::vector<std::future<void>> removals;
  for (const auto& marker : markers_) {
    try {
      removals.push_back(session_.remove_async(marker, 0));
    } catch (const Error&) {
      // Left for gc, after its grace period.
    }
  }
  for (auto& removal : removals) {
    try {
      session_.wait(removal);
    } catch (const Error&) {
      // Gone already (gc), or ZooKeeper unreachable: gc removes it later.
    }
  }
}

void PendingMarkers::add(std::string marker) {
  std::lock_guard lock(mutex_);
  markers_.push_back(std::move(marker));
}

std::vector<std::string> PendingMarkers::take(std::size_t most) {
  std::lock_guard lock(mutex_);
  const std::size_t count = std::min(most, markers_.size());
  std::vector<std::string> taken(markers_.end() - static_cast<std::ptrdiff_t>(count), markers_.end());
  markers_.resize(markers_.size() - count);
  return taken;
}

void PendingMarkers::give_back(std::vector<std::string> markers) {
  std::lock_guard lock(mutex_);
  for (auto& marker : markers) markers_.push_back(std::move(marker));
}

}  // namespace avout::detail
