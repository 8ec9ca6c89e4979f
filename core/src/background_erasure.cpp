#include "background_erasure.hpp"

#include <exception>

namespace avout::detail {

BackgroundErasure::~BackgroundErasure() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void BackgroundErasure::post(Job job) {
  if (job.empty()) return;
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
    if (!worker_.joinable()) worker_ = std::thread([this] { work(); });
  }
  changed_.notify_all();
}

void BackgroundErasure::wait_idle() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return jobs_.empty() && !busy_; });
}

void BackgroundErasure::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, and everything queued is done
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    lock.unlock();
    // Through the refs' own version sets, which they keep alive: the Store object that made
    // them may already be gone (a store may be destroyed before the client).
    for (auto& [ref, point] : job) {
      try {
        ref->data().erase(point);
      } catch (const std::exception&) {
        // Left for gc: an unreferenced point is garbage, never visible.
      }
    }
    job.clear();
    lock.lock();
    busy_ = false;
    changed_.notify_all();
  }
}

}  // namespace avout::detail
