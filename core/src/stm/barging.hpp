#pragma once
// Barging (docs/transactions.md rule 10): after a few failed attempts a dosync claims the refs
// it changes, younger transactions give way to a live older claimant, and every claim ends
// with its dosync. The claim, the yield decision and the release all live here.

#include "runtime/node_cache.hpp"
#include "stm/transaction.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

namespace avout::detail {

/// Throws InvalidOption for barging settings that make no sense (client_options.hpp).
void require_valid(const BargingOptions& options);

/// Barging state of one dosync, carried from attempt to attempt.
struct BargeState {
  /// Set by the first attempt's read point, or by the first claim of a dosync whose attempts
  /// so far were validated (without a read point of their own): every claim carries one.
  std::optional<TransactionAge> age;
  std::size_t failed_attempts = 0;  ///< attempts that retried so far
  std::size_t yields = 0;           ///< attempts that gave way to an older transaction
  /// Tags this dosync holds: ref -> tag version after our setData (none in `unsure`).
  std::map<std::shared_ptr<RefCore>, std::int32_t> held;
  /// Claims whose reply was lost (a ref claimed again moves here from `held`): held exactly
  /// when the tag carries our age (read again before the dosync ends, so none outlives it).
  std::set<std::shared_ptr<RefCore>> unsure;
};

/// A ref's barging tag as one commit read it.
struct BargeTag {
  std::optional<TransactionAge> owner;  ///< the claimant; nullopt: unclaimed
  std::int32_t version = 0;             ///< the tag node's version, checked by the multi
};

/// Starts looking up `ref`'s tag through the node cache (finished by finish_tags).
NodeCache::Lookup begin_tag(StmContext& stm, const RefCore& ref);

/// The tags of `refs` from their lookups begun by begin_tag, one per ref (a missing tag, of a
/// ref made before tags existed, is created).
std::vector<BargeTag> finish_tags(StmContext& stm,
                                  const std::vector<std::shared_ptr<RefCore>>& refs,
                                  std::vector<NodeCache::Lookup>& lookups);

/// Reads the tags of `refs` pipelined through the node cache (begin_tag, then finish_tags).
std::vector<BargeTag> read_tags(StmContext& stm, const std::vector<std::shared_ptr<RefCore>>& refs);

/// Counts a failed attempt of `barge`'s dosync; true when it should claim its refs now.
bool claim_due(const BargingOptions& options, BargeState& barge);

/// Claims `refs` for `barge`'s dosync, all but those a live older transaction holds; dates
/// the dosync first (a sync and the clock) when no read point has yet.
void claim(StmContext& stm, BargeState& barge, const std::vector<std::shared_ptr<RefCore>>& refs);

/// Throws RetryAttempt when a live older transaction claims one of `refs` (read as `tags`
/// through `lookups`, finished by finish_tags) and this dosync has not yet given way its
/// limit of times; first waits until that tag's cache slot moves (the claimant's commit or
/// release sets the tag), at most yield_wait_cap and the thread's ReplyDeadline.
void yield_to_older(StmContext& stm, BargeState& barge,
                    const std::vector<std::shared_ptr<RefCore>>& refs,
                    const std::vector<BargeTag>& tags,
                    const std::vector<NodeCache::Lookup>& lookups);

/// The longest a yield waits for the claim it gives way to: a claimant alive but slow holds
/// others no longer than this per yield (BargingOptions::yield_limit bounds the yields).
inline constexpr std::chrono::milliseconds yield_wait_cap{50};

/// The commit multi's tag operations for `refs`: our own claims end (emptied), the others
/// are checked at the version read. `released` receives the refs whose claim the commit ends.
std::vector<Operation> tag_operations(StmContext& stm, const BargeState& barge,
                                      const std::vector<std::shared_ptr<RefCore>>& refs,
                                      const std::vector<BargeTag>& tags,
                                      std::vector<std::shared_ptr<RefCore>>& released);

/// Forgets the claims a landed commit ended.
void forget_claims(BargeState& barge, const std::vector<std::shared_ptr<RefCore>>& released);

/// Ends every claim a dosync still holds when it returns or throws, so younger transactions
/// stop yielding at once. A claim whose reply was lost is ours exactly when its tag carries
/// our age: read after a sync first. What ZooKeeper does not settle at once (a blip, a lost
/// reply) the client's callback thread settles later, with outage_pauses between tries (each
/// waiting a quarter second at most, so user callbacks are not held up), until the release
/// lands, the tag names someone else, or the claim's session has ended (then everyone
/// ignores the claim): no claim outlives its dosync for longer than ZooKeeper stays away.
class ClaimRelease {
 public:
  /// Releases `barge`'s claims on destruction.
  ClaimRelease(StmContext& stm, BargeState& barge) : stm_(stm), barge_(barge) {}
  ClaimRelease(const ClaimRelease&) = delete;
  ClaimRelease& operator=(const ClaimRelease&) = delete;
  ~ClaimRelease();

 private:
  StmContext& stm_;
  BargeState& barge_;
};

}  // namespace avout::detail
