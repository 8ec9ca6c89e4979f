// guarded_by: a dosync commits only while a lock is held. The commit multi checks the node
// proving the hold (stm/participant.hpp is all a lock sees of the transaction), so a hold
// lost before the commit fails it with LockLost instead of a retry.
#include "locks/lock_core.hpp"
#include "stm/participant.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

void guard_transaction(const GuardedBy& guard) {
  auto* transaction = OpenTransaction::current();
  if (transaction == nullptr) throw NoTransaction("guarded_by needs a running dosync");
  const std::string node = guard.lock->proof_of_hold(guard.shared);
  transaction->add_to_commit({op::Check{node, 0}}, {}, [name = guard.lock->name()] {
    throw LockLost("lock " + name + " was lost before the transaction could commit");
  });
}

}  // namespace avout::detail
