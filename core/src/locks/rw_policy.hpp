#pragma once
// A read-write lock's writer policy as a small strategy (pure, no ZooKeeper): whom a reader
// waits for, and what a writer first in the writer queue still does before it holds. The
// policy is the lock's, recorded in its folder node (records/lock_policy_record.hpp), so
// every process asks the same strategy.

#include <avout/distributed_lock.hpp>

namespace avout::detail {

/// The queues of one lock (locks/lock_queues.hpp): its writers (a mutex has only these), its
/// readers, and the gates soft writers close.
enum class LockQueue { writers, readers, gates };

/// What one writer policy decides.
class ReadWritePolicy {
 public:
  /// The strategy of `policy` (one shared instance per policy).
  static const ReadWritePolicy& of(WriterPolicy policy);
  virtual ~ReadWritePolicy() = default;

  /// The queue whose nodes bar a reader: the writers' (hard: any queued writer keeps new
  /// readers out) or the gates' (soft: only a writer whose turn came closes a gate).
  virtual LockQueue reader_barrier() const = 0;
  /// Whether a writer first in line, once the readers left, closes a gate (soft) instead of
  /// holding at once (hard: its place in the writer queue already bars readers).
  virtual bool closes_gate() const = 0;
  /// Whether a writer takes the lock only after a quiet period in which no reader came or
  /// went (timed_soft).
  virtual bool waits_for_quiet() const = 0;
};

}  // namespace avout::detail
