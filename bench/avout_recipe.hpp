#pragma once
// Avout's 2011 recipe for refs, as a peer: the ZooKeeper operations its deref and its
// ref-set in a transaction issue, one after another, against real nodes (a lock queue,
// history and transaction folders per ref, a shared history of transaction states).

#include <avout/zookeeper_session.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace avout::bench {

/// Refs laid out the way Avout's 2011 recipe keeps them, and its two operations on them.
class AvoutRecipe {
 public:
  /// Creates `refs` refs' folders under a fresh path on `session` (which must outlive this).
  AvoutRecipe(ZooKeeperSession& session, std::size_t refs);

  /// A deref of the first ref outside a transaction: its 7 sequential operations.
  void deref();
  /// A ref-set of the first `k` refs in one transaction: about 18 sequential operations for
  /// one ref, of which all but the transaction's own (start, state, commit point) repeat per
  /// ref.
  void ref_set(std::size_t k);

 private:
  ZooKeeperSession& session_;
  std::string history_;
  std::vector<std::string> refs_;
};

}  // namespace avout::bench
