#pragma once
// The transaction engine of one client (docs/transactions.md): its refs, transaction ages
// and counters, each thread's last dosync kind, the multis in flight, the value batches and
// background erasure.

#include "records/stm_records.hpp"
#include "runtime/runtime.hpp"
#include "stm/sibling_multis.hpp"

#include <avout/backend.hpp>
#include <avout/garbage_report.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace avout::detail {

class BackgroundErasure;
class RefCore;
class StoreBatches;

/// The transaction engine of one client: its refs and transaction counters, on the
/// client's Runtime (session, paths, ids, value cache).
class StmContext {
 public:
  explicit StmContext(Runtime& runtime);
  ~StmContext();
  StmContext(const StmContext&) = delete;
  StmContext& operator=(const StmContext&) = delete;
  /// What the client's engines share.
  Runtime& runtime() { return runtime_; }
  /// Trimmed values waiting to be erased off the committing threads (rule 16).
  BackgroundErasure& erasures() { return *erasures_; }
  /// Writes and erases a commit's values, a batch per store, the stores concurrently.
  StoreBatches& batches() { return *batches_; }

  /// Whether the calling thread's previous dosync on this client wrote nothing (its next one
  /// is predicted read-only and reads synced: docs/transactions.md, "Isolation").
  bool predicts_read_only() const;
  /// Notes whether the calling thread's dosync that just ended wrote (`wrote`).
  void note_dosync(bool wrote);
  /// The heads at the versions this client's commit multis in flight expect (V8).
  SiblingMultis& siblings() { return siblings_; }

  /// A new transaction age for a dosync whose first read point is `read_point`.
  TransactionAge new_age(std::int64_t read_point);

  /// Attaches to the ref `name` in `store`, creating it with `initial` when it is new. All
  /// handles of one name share one RefCore per client (rule 14).
  std::shared_ptr<RefCore> attach(const std::string& name, Store& store, const Bytes& initial);

  /// Removes the ref `name` whose values live in `store` (ref_removal.cpp): its head becomes
  /// a tombstone in a commit multi, then its values are erased. False when it never existed;
  /// true when it is removed now (also when it was already).
  bool remove(const std::string& name, Store& store);

  /// See Client::gc.
  GarbageReport collect_garbage(const std::vector<Store*>& stores,
                                std::chrono::milliseconds marker_grace);

  /// Transactions committed, attempts retried (for benchmarks and tests).
  std::uint64_t commits() const { return commits_; }
  std::uint64_t retries() const { return retries_; }
  void count_commit() { ++commits_; }
  /// Counts an attempt retried (or a commit recomputed) for `cause`, in the metrics too.
  void count_retry(RetryCause cause) {
    ++retries_;
    runtime_.metrics().retry(cause);
  }

 private:
  Runtime& runtime_;
  std::atomic<std::uint64_t> ages_{0};

  void create_head(RefCore& ref, Store& store, const Bytes& initial);
  void erase_values(const std::string& name, Store& store);

  struct KnownRef {
    std::weak_ptr<RefCore> core;
    std::string store;  // its store's description
  };
  std::mutex refs_mutex_;
  std::unordered_map<std::string, KnownRef> refs_;  // name -> its one identity in this client

  std::atomic<std::uint64_t> commits_{0};
  std::atomic<std::uint64_t> retries_{0};
  mutable std::mutex threads_mutex_;
  std::unordered_map<std::thread::id, bool> read_only_last_;  // thread -> its last wrote nothing
  SiblingMultis siblings_;
  std::unique_ptr<StoreBatches> batches_;
  std::unique_ptr<BackgroundErasure> erasures_;  // last: finishes before the rest goes
};

}  // namespace avout::detail
