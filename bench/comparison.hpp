#pragma once
// avout and its peers side by side per workload, from the rows of one run (recorded()).

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace avout::bench {

/// One bar of the comparison: who ran a workload and how fast.
struct Contender {
  std::string workload{};   ///< the shared workload, e.g. "read-write txn, k=8"
  std::string who{};        ///< "avout, redis refs", "etcd STM serializable", ...
  bool avout = false;       ///< avout's own row (else a peer's)
  bool throughput = false;  ///< compared by operations per second (else by p50 latency)
  double value = 0;         ///< p50 in ms, or operations per second
  double floor_ratio = 0;   ///< p50 over the row's floor (0: no floor)
  std::string floor{};      ///< the floor's name and p50
};

/// The contenders found in `rows`, grouped by workload in a fixed order; workloads and
/// peers that did not run (tool missing, --only) are left out.
std::vector<Contender> side_by_side(const nlohmann::json& rows);

/// Prints the side-by-side table: per workload, avout's rows then each peer's.
void print_side_by_side(const std::vector<Contender>& contenders);

}  // namespace avout::bench
