#pragma once
// Erases the values commits trimmed from their refs' history, off the committing thread
// (docs/transactions.md rule 16). Each job holds its refs, so their stored versions stay
// reachable however long the job waits; the destructor finishes the queued jobs.

#include "stm.hpp"

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace avout::detail {

/// One client's queue of trimmed values to erase, worked by one thread started on first use;
/// each job's values go in one ReferenceData::erase_values call per store.
class BackgroundErasure {
 public:
  /// Points of refs to erase; every ref's point is one job element.
  using Job = std::vector<std::pair<std::shared_ptr<RefCore>, Point>>;

  BackgroundErasure() = default;
  /// Erases what is queued, then stops the thread.
  ~BackgroundErasure();
  BackgroundErasure(const BackgroundErasure&) = delete;
  BackgroundErasure& operator=(const BackgroundErasure&) = delete;

  /// Queues `job` and returns at once; failures are left for gc (unreferenced values are
  /// never visible).
  void post(Job job);
  /// Returns once every job posted so far is done (for tests and benchmarks).
  void wait_idle();

 private:
  void work();
  static void erase(const Job& job);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> jobs_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace avout::detail
