#pragma once
// avout::Lock (a reentrant distributed mutex) and avout::ReadWriteLock, on ZooKeeper.
//
// Recipe (docs/recipes.md, "Locks"): writers queue as ephemeral sequential nodes
// <root>/locks<name>/writers/w-<unique id>-<seq>; each waits only for the node just before it
// (no herd), and a deleted predecessor means "list again", never "acquired". The unique id in
// the name lets a create retried after a lost connection find its own node. A ReadWriteLock
// adds reader nodes (<root>/rwlocks<name>/readers/r-<unique id>-<seq>); a reader creates its
// node, syncs, and enters when nothing bars it, else removes its node and waits; the first
// writer holds once, after a sync, it sees no reader node. Whichever of a reader and a writer
// creates its node second sees the other's, so they never both hold. Writer policies decide
// what bars readers:
//   hard (default): any queued writer (the writer queue is the gate), so a waiting writer
//     blocks new readers and successive writers keep them out until the queue empties.
//   soft: only a gate node (<...>/gates/g-<unique id>-<seq>, a name of its own per hold)
//     that the first writer creates once no reader is inside, so readers keep entering
//     while a writer waits.
//   timed_soft: as soft, and the writer closes the gate only after a quiet period in which
//     no reader came or went.
// The policy is the lock's: a hard writer closes no gate and soft readers look only at
// gates, so mixing policies would let a reader in beside a writer. The first process to open
// the lock records its policy in the lock's node (<root>/rwlocks<name>); opening it with
// another throws Mismatch naming both (delete the lock's node, unused, to change it).
//
// Only nodes named <kind>-<16 hex digits>-<seq> count: the folders of a lock whose name
// nests below this one (say /l/writers below /l) sit beside them and are ignored. <seq> is the
// folder's signed 32-bit child counter as ZooKeeper prints it ("%010d"), which wraps after
// 2^31 creates and deletes; queues are ordered by distance modulo 2^32, so the wrap is
// harmless while no queued node lives through 2^31 changes of its folder.
// A barred reader waits for the newest barrier node only, never for the whole folder.
//
// Holds are per thread and reentrant. When the session is lost the holder is told: is_held()
// turns false, the on_lost callbacks run (on the client's callback thread), and ensure_held()
// and dosync(guarded_by(lock), ...) throw LockLost. Every wait is bounded by its deadline
// (requests in flight included) or ends with LockLost / SessionExpired.
//
// What the calls throw (all derive from avout::Error):
//   Timeout         lock(deadline), or lock() past ClientOptions::operation_timeout: the
//                   deadline passed or its stop token was stopped ("lock NAME: deadline
//                   passed" / "cancelled"); the request node is deleted, nothing is held
//   LockLost        the session ended while waiting or holding; unlock() without a hold
//   SessionExpired  the session expired during a call
//   ConnectionLoss  ZooKeeper unreachable for a call that does not ride it out
//                   (fencing_token's read)
//   Error           a read-to-write upgrade (could deadlock two readers)
//   Mismatch        Client::read_write_lock with another writer policy than the lock's

#include <avout/deadline.hpp>
#include <avout/errors.hpp>
#include <avout/export.hpp>
#include <avout/guarded_by.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace avout {

namespace detail {
class LockCore;
/// The proof of this thread's hold of `lock` (its read side when `shared`), for guarded_by:
/// LockLost when it is not held now, or not any more at commit.
AVOUT_API std::shared_ptr<const HoldProof> lock_hold_proof(std::shared_ptr<LockCore> lock, bool shared);
}  // namespace detail
class ReadWriteLock;

/// When a waiting writer of a ReadWriteLock lets new readers in.
enum class WriterPolicy {
  hard,       ///< never: a waiting writer blocks new readers (writers do not starve)
  soft,       ///< always: readers enter while a writer waits (readers never wait for waiters)
  timed_soft  ///< as soft, and the writer takes the lock only after a quiet period without readers
};

/// A distributed, reentrant, FIFO mutex. Lockable and TimedLockable: works with
/// std::scoped_lock, std::unique_lock and std::lock_guard. Copies share one lock object;
/// destroying the last copy releases the holds still taken through it (in the background,
/// retried until the nodes are gone or ZooKeeper reports the session ended; destroying the
/// Client closes the session, which deletes them at once).
class AVOUT_API Lock {
 public:
  /// Blocks until this thread holds the lock (reentrant: counts nested holds). Throws
  /// LockLost / SessionExpired when the session ends while waiting, Timeout once
  /// ClientOptions::operation_timeout (if set) passed.
  void lock();
  /// Like lock(), giving up with Timeout when `deadline` passes or its stop token is
  /// stopped (waits wake at once), within about 50 ms of it even while the server answers
  /// nothing: a request in flight is abandoned (its reply reaches nobody). Nothing is left
  /// behind: the request node is deleted, and a create whose outcome is still unknown, or a
  /// delete not yet answered, is settled by the client in the background (the node such a
  /// create made is found by the unique id in its name and deleted).
  void lock(const Deadline& deadline);
  /// Takes the lock only if it is free now (one round of ZooKeeper calls).
  bool try_lock();
  /// Waits up to `timeout`; false (and no node left behind) when it passes, within about
  /// 50 ms of it whatever the server does (see lock(const Deadline&)).
  template <typename Rep, typename Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    return try_lock_until(std::chrono::steady_clock::now() + timeout);
  }
  /// Waits until `deadline`; false (and no node left behind) when it passes.
  template <typename Clock, typename Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    const auto left = deadline - Clock::now();
    return acquire_until(std::chrono::steady_clock::now() +
                         std::chrono::duration_cast<std::chrono::steady_clock::duration>(left));
  }
  /// Ends one hold of this thread; the last one deletes the node and returns once it is
  /// deleted or gone with the session (during an outage it waits for the reconnect, at most
  /// until the server may have ended the session; the client then goes on deleting it in
  /// the background, retrying until it is gone or ZooKeeper reports the session ended). A hold
  /// that was already lost is simply dropped. Throws LockLost when this thread holds nothing
  /// (std::mutex leaves that undefined).
  void unlock();
  /// True while this thread holds the lock and its session is not lost. While disconnected
  /// it turns false once the server may have expired the session: one negotiated session
  /// timeout after the last reply the client can have heard (the client notices silence
  /// after 2/3 of it), less a small margin. After this process stalled (stopped, starved)
  /// for half the session timeout, it is false until the server answers the session again.
  bool is_held() const;
  /// Throws LockLost unless is_held().
  void ensure_held() const;
  /// A number that strictly increases with every acquisition of this lock (in any process),
  /// read and write holds of a ReadWriteLock alike: the zxid that created the node proving
  /// the hold, read on the first call of a hold (may throw ConnectionLoss). Hand it to a
  /// resource that must refuse stale holders. 0 when not held by this thread.
  std::uint64_t fencing_token() const;
  /// Runs `callback` (on the client's callback thread) when a hold of this process is lost.
  void on_lost(std::function<void()> callback);
  /// The lock's name.
  const std::string& name() const;

  /// True for the read side of a ReadWriteLock.
  bool read_side() const { return shared_; }

 private:
  friend class Client;
  friend class ReadWriteLock;
  friend GuardedBy guarded_by(const Lock& lock);
  friend GuardedBy guarded_by(ReadWriteLock& lock);
  const std::shared_ptr<detail::LockCore>& core() const { return core_; }
  explicit Lock(std::shared_ptr<detail::LockCore> core, bool shared = false)
      : core_(std::move(core)), shared_(shared) {}
  bool acquire_until(std::chrono::steady_clock::time_point deadline);
  std::shared_ptr<detail::LockCore> core_;
  bool shared_ = false;  // a ReadWriteLock's read view
};

/// A distributed, reentrant read-write lock. SharedTimedLockable: std::shared_lock works for
/// reading, std::unique_lock for writing; read_lock() and write_lock() give Lockable views.
/// A thread holding the write lock may also read; asking to write while only reading throws
/// Error (an upgrade could deadlock two readers). Destroying the last copy (views included)
/// releases the holds still taken through it, as for Lock.
class AVOUT_API ReadWriteLock {
 public:
  /// Exclusive hold (see Lock::lock).
  void lock() { writer_.lock(); }
  /// Exclusive hold by `deadline`, else Timeout (see Lock::lock(const Deadline&)).
  void lock(const Deadline& deadline) { writer_.lock(deadline); }
  /// Exclusive hold if free now.
  bool try_lock() { return writer_.try_lock(); }
  /// Exclusive hold within `timeout`.
  template <typename Rep, typename Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    return writer_.try_lock_for(timeout);
  }
  /// Exclusive hold by `deadline`.
  template <typename Clock, typename Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return writer_.try_lock_until(deadline);
  }
  /// Ends one exclusive hold.
  void unlock() { writer_.unlock(); }
  /// Shared hold.
  void lock_shared() { reader_.lock(); }
  /// Shared hold by `deadline`, else Timeout (see Lock::lock(const Deadline&)).
  void lock_shared(const Deadline& deadline) { reader_.lock(deadline); }
  /// Shared hold if no writer holds or (hard policy) waits.
  bool try_lock_shared() { return reader_.try_lock(); }
  /// Shared hold within `timeout`.
  template <typename Rep, typename Period>
  bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& timeout) {
    return reader_.try_lock_for(timeout);
  }
  /// Shared hold by `deadline`.
  template <typename Clock, typename Duration>
  bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return reader_.try_lock_until(deadline);
  }
  /// Ends one shared hold.
  void unlock_shared() { reader_.unlock(); }
  /// The read side as a Lockable (for std::scoped_lock and friends).
  Lock& read_lock() { return reader_; }
  /// The write side as a Lockable.
  Lock& write_lock() { return writer_; }
  /// The policy this lock was made with.
  WriterPolicy policy() const;

 private:
  friend class Client;
  explicit ReadWriteLock(std::shared_ptr<detail::LockCore> core)
      : writer_(core, false), reader_(core, true) {}
  Lock writer_;
  Lock reader_;
};

/// For Client::dosync(guarded_by(lock), body): the transaction commits only while this
/// thread's hold of `lock` is still alive (its node is checked inside the commit multi);
/// otherwise it throws LockLost and commits nothing.
inline GuardedBy guarded_by(const Lock& lock) {
  return GuardedBy{detail::lock_hold_proof(lock.core(), lock.read_side())};
}
/// See guarded_by(const Lock&) (the write side of a read-write lock).
inline GuardedBy guarded_by(ReadWriteLock& lock) {
  return GuardedBy{detail::lock_hold_proof(lock.write_lock().core(), false)};
}

}  // namespace avout
