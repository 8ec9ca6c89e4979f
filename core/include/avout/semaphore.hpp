#pragma once
// avout::Semaphore and avout::Permit: N permits shared by every process that opens the same
// name (docs/recipes.md, "Semaphores"), like Curator's InterProcessSemaphoreV2, on the
// sequential-queue engine: each acquire queues one ephemeral node and holds once it is among
// the first N of the queue; a waiter watches only the N nodes right ahead of it (no herd).
//
// Fencing tokens: a permit's token is the zxid that created its node. The holders are always
// the first N nodes of the queue, so a node is granted only after (or with) every node ahead
// of it: grant order is queue order, which is creation order, which is zxid order. zxids are
// 64 bits and only grow, across every process and every leader change, so tokens strictly
// increase with each grant of the name, in grant order, also after the node names' 32-bit
// sequence wrapped (the queue orders names modulo 2^32; zxids do not wrap). Up to N permits
// are held at once, so a resource fenced by them must not refuse a lower token merely for
// being lower than another live holder's (as a mutex's would): dosync(guarded_by(permit))
// is the check that needs no such care.
//
// Failure model: a permit counts only while the session backs it. A disconnect past the
// point where the server may have ended the session, an expiry, or a stall of this process
// (a SIGSTOP past the session timeout) makes is_held() false at once, and on_lost callbacks
// run (once per loss); the node then goes with its session or is removed after a reconnect.
// A holder that dies frees its permit when its session ends. Lost create replies are
// resolved (the unique id in the node's name finds it again), so an acquire counts once.
//
// What the calls throw (all derive from avout::Error):
//   Timeout     acquire(deadline): the deadline passed or its token stopped; nothing of this
//               acquire stays queued (a create in doubt is looked for and removed)
//   Mismatch    Client::semaphore with another N than the name was created with
//   LockLost    dosync(guarded_by(permit), ...) when the permit is no longer held: a permit is
//               a shared lock's hold, and LockLost is already the one "your hold is gone"
//               error guarded_by throws, so one catch serves locks and permits alike

#include <avout/deadline.hpp>
#include <avout/errors.hpp>
#include <avout/export.hpp>
#include <avout/guarded_by.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace avout {

namespace detail {
class SemaphoreCore;
struct PermitState;
}  // namespace detail

/// One of a semaphore's permits, held from its acquisition until release() or destruction.
/// Movable, not copyable; not tied to a thread. Must not outlive its Client.
class AVOUT_API Permit {
 public:
  /// Releases the permit if still held.
  ~Permit();
  /// Takes `other`'s permit; `other` then holds none.
  Permit(Permit&& other) noexcept;
  /// Releases the permit held before, then takes `other`'s.
  Permit& operator=(Permit&& other) noexcept;
  /// Not copyable: one permit, one owner.
  Permit(const Permit&) = delete;
  /// Not copyable: one permit, one owner.
  Permit& operator=(const Permit&) = delete;

  /// True while held and the session backs it (false after release, a loss, a stall).
  bool is_held() const;
  /// The permit's fencing token (see the header comment); 0 when not held (as a lock's).
  std::uint64_t fencing_token() const;
  /// Gives the permit back: deletes its node, in the background if the reply is lost (until
  /// deleted or the session ends); idempotent, never throws.
  void release() noexcept;

 private:
  friend class Semaphore;
  friend GuardedBy guarded_by(const Permit& permit);
  /// Made by Semaphore only.
  Permit(std::shared_ptr<detail::SemaphoreCore> core, std::shared_ptr<detail::PermitState> state);
  std::shared_ptr<detail::SemaphoreCore> core_;  ///< null once moved from
  std::shared_ptr<detail::PermitState> state_;   ///< this permit's node and token
};

/// A counting semaphore of N permits shared by every process (Client::semaphore). Copies
/// share it. Must not outlive its Client.
class AVOUT_API Semaphore {
 public:
  /// Blocks until a permit is granted.
  Permit acquire();
  /// As acquire(); Timeout once `deadline` passes, nothing left queued.
  Permit acquire(const Deadline& deadline);
  /// A permit if one is free now (one look at the queue); nullopt otherwise, nothing left.
  std::optional<Permit> try_acquire();
  /// A permit if one is granted within `timeout`; nullopt otherwise, nothing left.
  std::optional<Permit> try_acquire_for(std::chrono::milliseconds timeout);
  /// Adds a callback run (on the client's callback thread) when held permits are lost.
  void on_lost(std::function<void()> callback);
  /// The number of permits N.
  std::size_t permits() const;
  /// The semaphore's name.
  const std::string& name() const;

 private:
  friend class Client;
  /// Made by Client::semaphore only.
  explicit Semaphore(std::shared_ptr<detail::SemaphoreCore> core) : core_(std::move(core)) {}
  std::shared_ptr<detail::SemaphoreCore> core_;  ///< shared by copies
};

/// For Client::dosync(guarded_by(permit), body): commits only while `permit` is held (its
/// node checked inside the commit); LockLost otherwise, nothing committed.
AVOUT_API GuardedBy guarded_by(const Permit& permit);

}  // namespace avout
