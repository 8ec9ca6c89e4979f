#pragma once
// A commit's values in one round trip per store, all stores at once (docs/transactions.md
// rule 16): batches grouped by store, each written with Store::set_values or erased with
// Store::erase_values, the stores concurrently.

#include <avout/backend.hpp>

#include <vector>

namespace avout::detail {

/// The values one commit writes to one store.
struct StoreWrites {
  Store* store;                    ///< where they go
  std::vector<PointValue> values;  ///< each at its fresh point
};

/// The values one commit erases from one store.
struct StoreErasures {
  Store* store;                        ///< where they are
  std::vector<PointErasure> erasures;  ///< each by its point
};

/// Writes every batch, the stores concurrently (this thread writes one of them). Returns once
/// all have finished; then rethrows the first failure, if any (any value may be written).
void write_per_store(std::vector<StoreWrites>& batches);

/// Erases every batch, the stores concurrently; failures are ignored (unreferenced values
/// are garbage, never visible, and gc sweeps them).
void erase_per_store(std::vector<StoreErasures>& batches);

}  // namespace avout::detail
