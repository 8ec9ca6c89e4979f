#pragma once
// Erases the values commits trimmed from their refs' history, off the committing thread
// (docs/transactions.md rule 16). Each job holds its refs, so their stored versions stay
// reachable however long the job waits; the destructor finishes the queued jobs.

#include "stm/transaction.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace avout::detail {

/// Values of one store, for one ReferenceData::erase_values call.
using ErasureBatch = std::vector<PointErasure>;

/// Joins batches that share a version set, which proves them of one store; batches that only
/// name the same Store address stay apart, since a destroyed Store's address may be reused.
std::vector<ErasureBatch> merge_sharing_version_sets(std::vector<ErasureBatch> batches);

/// One client's queue of trimmed values to erase, worked by one thread started on first use.
/// The thread gathers the jobs of commits that follow each other closely (a few
/// milliseconds) and erases them in one ReferenceData::erase_values call per store.
class BackgroundErasure {
 public:
  /// Points of refs to erase; every ref's point is one job element.
  using Job = std::vector<std::pair<std::shared_ptr<RefCore>, Point>>;

  /// How long the thread waits for more jobs once one is queued.
  static constexpr std::chrono::milliseconds gather_window{20};
  /// Queued values that end the wait early.
  static constexpr std::size_t gather_limit = 1024;

  BackgroundErasure() = default;
  /// Erases what is queued, then stops the thread.
  ~BackgroundErasure();
  BackgroundErasure(const BackgroundErasure&) = delete;
  BackgroundErasure& operator=(const BackgroundErasure&) = delete;

  /// Queues `job` and returns at once; failures are left for gc (unreferenced values are
  /// never visible).
  void post(Job job);

 private:
  void work();
  static void erase(const std::deque<Job>& jobs);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> jobs_;
  std::size_t queued_values_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace avout::detail
