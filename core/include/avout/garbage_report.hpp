#pragma once
// avout::GarbageReport: what Client::gc removed.

#include <cstddef>

namespace avout {

/// What Client::gc removed.
struct GarbageReport {
  std::size_t refs_scanned = 0;     ///< ref heads looked at
  std::size_t points_erased = 0;    ///< unreferenced values of dead writers erased
  std::size_t markers_removed = 0;  ///< commit markers past their grace period removed
};

}  // namespace avout
