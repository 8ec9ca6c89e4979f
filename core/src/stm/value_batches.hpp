#pragma once
// A transaction's values in one round trip per store, all stores at once (docs/transactions.md
// rule 16): batches grouped by store, each written with Store::set_values or read with
// Store::get_values, the stores concurrently. (Erasures go through BackgroundErasure.)

#include <avout/backend.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace boost::asio {
class thread_pool;
}

namespace avout::detail {

/// The values one commit writes to one store.
struct StoreWrites {
  Store* store;                    ///< where they go
  std::vector<PointValue> values;  ///< each at its fresh point
};

/// The values one transaction reads from one store.
struct StoreReads {
  Store* store;                              ///< where they are
  std::vector<PointRead> reads;              ///< each by its point
  std::vector<std::optional<Bytes>> values;  ///< filled by StoreBatches::read, in that order
};

/// The batch of `batches` (StoreWrites or StoreReads) for `store`, added at
/// the end when there is none yet.
template <typename Batch>
Batch& batch_for(std::vector<Batch>& batches, Store* store) {
  for (auto& batch : batches) {
    if (batch.store == store) return batch;
  }
  Batch added{};
  added.store = store;
  return batches.emplace_back(std::move(added));
}

/// Runs the batches of a commit, one per store, the stores concurrently: the calling thread
/// takes the first, helper threads kept for the client (started on first use) the others.
/// A batch no helper has begun by the time the caller is done with its own is run by the
/// caller too, so a commit never waits behind another commit's batches, and never starts a
/// thread of its own (a thread per commit cost more than a Redis round trip).
class StoreBatches {
 public:
  /// Helper threads to start on first use; 0 runs every batch on the calling thread.
  explicit StoreBatches(std::size_t helpers = 2);
  /// Waits for the batches helpers have begun.
  ~StoreBatches();
  StoreBatches(const StoreBatches&) = delete;
  StoreBatches& operator=(const StoreBatches&) = delete;

  /// Writes every batch. Returns once all have finished; then rethrows the first failure,
  /// if any (any value may be written).
  void write(std::vector<StoreWrites>& batches);
  /// Reads every batch into its `values`. Returns once all have finished; then rethrows the
  /// first failure, if any.
  void read(std::vector<StoreReads>& batches);

 private:
  void run(std::size_t count, const std::function<void(std::size_t)>& work);
  boost::asio::thread_pool* helpers();

  std::size_t helper_count_;
  std::mutex mutex_;  // guards the start of pool_
  std::unique_ptr<boost::asio::thread_pool> pool_;
};

}  // namespace avout::detail
