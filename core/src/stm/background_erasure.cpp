#include "stm/background_erasure.hpp"

#include <exception>
#include <map>
#include <numeric>
#include <unordered_map>

namespace avout::detail {

std::vector<ErasureBatch> merge_sharing_version_sets(std::vector<ErasureBatch> batches) {
  std::vector<std::size_t> parent(batches.size());
  std::iota(parent.begin(), parent.end(), std::size_t{0});
  const auto root = [&](std::size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  std::unordered_map<const ReferenceData*, std::size_t> first_batch_of;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    for (const auto& e : batches[i]) {
      const auto [found, fresh] = first_batch_of.try_emplace(e.data, i);
      if (!fresh) parent[root(i)] = root(found->second);
    }
  }
  std::vector<ErasureBatch> merged;
  std::unordered_map<std::size_t, std::size_t> slot_of_root;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    const auto [slot, fresh] = slot_of_root.try_emplace(root(i), merged.size());
    if (fresh) merged.emplace_back();
    auto& into = merged[slot->second];
    into.insert(into.end(), batches[i].begin(), batches[i].end());
  }
  return merged;
}

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
    queued_values_ += job.size();
    jobs_.push_back(std::move(job));
    if (!worker_.joinable()) worker_ = std::thread([this] { work(); });
  }
  changed_.notify_all();
}

void BackgroundErasure::erase(const std::deque<Job>& jobs) {
  // Within a job, by Store address: all of the job's stores were alive when it was posted.
  // Across jobs only through a shared version set (see merge_sharing_version_sets). Each
  // batch goes through one of its version sets, which the jobs' refs keep alive: the Store
  // object that made them may already be gone.
  std::vector<ErasureBatch> batches;
  for (const auto& job : jobs) {
    std::map<const Store*, ErasureBatch> by_store;
    for (const auto& [ref, point] : job) by_store[&ref->store()].push_back({&ref->data(), point});
    for (auto& [store, batch] : by_store) batches.push_back(std::move(batch));
  }
  for (const auto& batch : merge_sharing_version_sets(std::move(batches))) {
    try {
      batch.front().data->erase_values(batch);
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
    // Commits that follow within the window share the erase round trips.
    changed_.wait_for(lock, gather_window,
                      [&] { return stopping_ || queued_values_ >= gather_limit; });
    auto jobs = std::exchange(jobs_, {});
    queued_values_ = 0;
    lock.unlock();
    erase(jobs);
    jobs.clear();
    lock.lock();
  }
}

}  // namespace avout::detail
