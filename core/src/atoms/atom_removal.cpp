#include "atoms/atom_removal.hpp"

#include "records/atom_envelope.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

bool remove_atom_cell(const std::string& name, AtomState& cell, ZooKeeperSession& session,
                      const std::string& notice, std::size_t retry_limit) {
  bool lost = false;  // a compare-and-set went out whose reply was lost
  auto removed = [&] {
    if (!notice.empty()) session.set(notice, {}, -1);
    return true;
  };
  for (std::size_t attempt = 0; attempt < retry_limit; ++attempt) {
    if (notice.empty()) session.sync();  // the ZooKeeper-held cell is read as it is now
    const Versioned stored = cell.get();
    if (!stored.exists()) return false;
    // A lost write of ours, or another remover's: either way it ends removed once.
    if (is_atom_tombstone(stored.value)) return lost ? removed() : false;
    try {
      if (!cell.compare_and_set(stored, encode_atom_tombstone())) continue;  // a swap came first
    } catch (const ConnectionLoss&) {
      lost = true;  // read again: the tombstone is there or the value is unchanged
      continue;
    } catch (const StoreUnavailable&) {
      lost = true;
      continue;
    }
    return removed();
  }
  throw RetryLimitExceeded("atom " + name + ": swaps kept changing it while removing it");
}

}  // namespace avout::detail
