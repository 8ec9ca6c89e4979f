// guarded_by for locks: a dosync commits only while a lock is held. The commit multi checks
// the node proving the hold (stm/participant.hpp is all a lock sees of the transaction), so a
// hold lost before the commit fails it with LockLost instead of a retry.
#include "locks/lock_core.hpp"
#include "stm/participant.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

namespace {

// This thread's hold of one lock (or its read side).
class LockHoldProof final : public HoldProof {
 public:
  LockHoldProof(std::shared_ptr<LockCore> lock, bool shared)
      : lock_(std::move(lock)), shared_(shared) {}

  void guard_transaction() const override {
    auto* transaction = OpenTransaction::current();
    if (transaction == nullptr) throw NoTransaction("guarded_by needs a running dosync");
    const std::string node = lock_->proof_of_hold(shared_);
    transaction->add_to_commit({op::Check{node, 0}}, {}, [name = lock_->name()] {
      throw LockLost("lock " + name + " was lost before the transaction could commit");
    });
  }

 private:
  std::shared_ptr<LockCore> lock_;
  bool shared_;
};

}  // namespace

std::shared_ptr<const HoldProof> lock_hold_proof(std::shared_ptr<LockCore> lock, bool shared) {
  return std::make_shared<const LockHoldProof>(std::move(lock), shared);
}

}  // namespace avout::detail
