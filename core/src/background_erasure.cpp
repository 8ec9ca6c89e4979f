#include "background_erasure.hpp"

#include <exception>
#include <map>

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

void BackgroundErasure::erase(const Job& job) {
  // One batch per store, through a version set the job's refs keep alive: the Store object
  // that made them may already be gone (a store may be destroyed before the client). Its
  // address only tells the job's stores apart, which were all alive when the job was posted.
  std::map<const Store*, std::vector<PointErasure>> batches;
  for (const auto& [ref, point] : job) batches[&ref->store()].push_back({&ref->data(), point});
  for (const auto& [store, erasures] : batches) {
    try {
      erasures.front().data->erase_values(erasures);
    } catch (const std::exception&) {
      // Left for gc: an unreferenced point is garbage, never visible.
    }
  }
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
    erase(job);
    job.clear();
    lock.lock();
    busy_ = false;
    changed_.notify_all();
  }
}

}  // namespace avout::detail
