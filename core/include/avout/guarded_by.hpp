#pragma once
// avout::GuardedBy: a proof of a hold that a commit can check (a lock hold today; a permit or
// a leadership as the recipes grow). Client::dosync(guarded_by(x), body) commits only while
// the hold is still real: the check goes inside the commit multi, so a hold lost before the
// commit fails it (with the recipe's loss error) instead of landing.

#include <avout/export.hpp>

#include <memory>

namespace avout {

namespace detail {
/// Something held that a commit can check: each recipe that hands out holds implements it
/// (core/src), so GuardedBy is not tied to one recipe or to the thread that took the hold.
class AVOUT_API HoldProof {
 public:
  virtual ~HoldProof() = default;
  /// Adds the check of the hold to the transaction running on this thread; throws the
  /// recipe's loss error when it is not held now, NoTransaction outside dosync.
  virtual void guard_transaction() const = 0;
};
}  // namespace detail

/// For Client::dosync(guarded_by(hold), body): the transaction commits only while `proof`'s
/// hold is alive; otherwise it throws the hold's loss error (LockLost for a lock) and commits
/// nothing. Made by the recipes' guarded_by overloads.
struct GuardedBy {
  std::shared_ptr<const detail::HoldProof> proof;  ///< the hold that must still be real
};

namespace detail {
/// Adds `guard`'s check to the running transaction's commit (Client::dosync calls it).
inline void guard_transaction(const GuardedBy& guard) { guard.proof->guard_transaction(); }
}  // namespace detail

}  // namespace avout
