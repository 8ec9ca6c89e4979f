#pragma once
// V8 (docs/transactions.md, "Isolation"): threads of one client never send two commit multis
// expecting the same head at the same version. Both could not land, and the later one's
// failure would cost the server a logged transaction for nothing: it waits for the earlier's
// reply instead, then judges its reads again (V3), since a landed sibling superseded them.

#include <avout/deadline.hpp>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace avout::detail {

/// The (head path, version) pairs the client's multis in flight expect.
class SiblingMultis {
 public:
  /// A head at the version a multi expects it.
  using Key = std::pair<std::string, std::int32_t>;

  /// Claims `keys` for one multi once no sibling's multi in flight expects any of them; true
  /// when it had to wait for one (the caller judges its reads again before sending). Throws
  /// Timeout when `deadline` expires first.
  bool claim(const std::vector<Key>& keys, const Deadline& deadline);
  /// Ends a claim of `keys` (the multi's reply came, or it was not sent).
  void release(const std::vector<Key>& keys);

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  std::set<Key> expected_;
};

/// Holds a claim of SiblingMultis for its scope.
class SiblingClaim {
 public:
  /// Not claimed yet.
  explicit SiblingClaim(SiblingMultis& multis) : multis_(multis) {}
  ~SiblingClaim() { release(); }
  SiblingClaim(const SiblingClaim&) = delete;
  SiblingClaim& operator=(const SiblingClaim&) = delete;
  /// Claims `keys` (releasing an earlier claim first); true when it had to wait.
  bool claim(std::vector<SiblingMultis::Key> keys, const Deadline& deadline);
  /// Ends the claim, if any.
  void release();

 private:
  SiblingMultis& multis_;
  std::vector<SiblingMultis::Key> keys_;
};

}  // namespace avout::detail
