#pragma once
// Whether a dosync's first attempt may commit speculatively (docs/transactions.md,
// "Speculative commits"): over the heads this client has cached as of its own last commit,
// with no read point of its own, the commit multi checking that no commit landed since.
// Under contention such attempts fail, and each failed multi still costs ZooKeeper a logged
// transaction, so a failure sends the client's next first attempts the usual way: one after
// the first failure, twice as many after each further failure in a row, up to 64.

#include <cstdint>
#include <limits>
#include <mutex>

namespace avout::detail {

/// Whether a commit may speculate over this client's last commit, which left the clock at
/// `clock_version`: it sets the clock at that version. The clock's int32 version wraps after
/// 2^31 commits, and a wrapped clock is only a clock: at the last version (the set would wrap
/// it, which the session refuses, rule 1), at -1 (which asks for no version at all) and at
/// every wrapped, negative version, commits go the usual way, whose clock write names no
/// version, until the clock's version is positive again.
constexpr bool speculates_at(std::int32_t clock_version) {
  return clock_version >= 0 && clock_version < std::numeric_limits<std::int32_t>::max();
}

/// Whether first attempts may speculate now, after the failures of those before.
class SpeculationGate {
 public:
  /// True when this first attempt may speculate; false while a failure's penalty lasts.
  bool try_enter();
  /// A speculative commit landed: the next first attempt may speculate again.
  void landed();
  /// A speculative attempt found that another commit came first.
  void failed();

 private:
  static constexpr std::uint32_t longest_penalty = 64;
  std::mutex mutex_;
  std::uint32_t skip_ = 0;     // first attempts left to go the usual way
  std::uint32_t penalty_ = 0;  // what the next failure's skip_ grows from
};

}  // namespace avout::detail
