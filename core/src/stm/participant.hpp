#pragma once
// All that agents and locks see of a transaction (as libpqxx's transaction_focus is what
// objects joining a transaction see): whether one runs on this thread, and a way to add
// operations to its commit multi (an agent's send, a lock's guard). Keeps them off the STM's
// insides: they include this header and nothing else of stm/.

#include <avout/zookeeper_session.hpp>

#include <functional>
#include <vector>

namespace avout::detail {

/// The transaction open on the calling thread, as an object joining its commit sees it.
class OpenTransaction {
 public:
  /// The transaction running on this thread, or null.
  static OpenTransaction* current();

  /// Adds operations to this attempt's commit multi (after the heads and tags, before the
  /// clock): agent sends, lock guards. `on_commit` gets their results once the commit landed;
  /// `on_failure` (optional) is thrown instead of a retry when one of them made it fail.
  void add_to_commit(std::vector<Operation> operations,
                     std::function<void(const std::vector<OperationResult>&)> on_commit,
                     std::function<void()> on_failure = {});

  /// Operations added by one participant, with what hears the commit's outcome.
  struct Addition {
    std::vector<Operation> operations;  ///< in the multi, in order
    std::function<void(const std::vector<OperationResult>&)>
        on_commit;                     ///< their results once landed
    std::function<void()> on_failure;  ///< thrown instead of a retry when one of them failed
  };

  /// What participants added to this attempt so far (a work queue's take skips the items
  /// an earlier take of the same attempt got).
  const std::vector<Addition>& additions() const { return additions_; }

 protected:
  OpenTransaction() = default;
  ~OpenTransaction() = default;
  OpenTransaction(const OpenTransaction&) = delete;
  OpenTransaction& operator=(const OpenTransaction&) = delete;

  std::vector<Addition> additions_;  // in the order they were added
};

}  // namespace avout::detail
