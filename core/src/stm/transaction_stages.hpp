#pragma once
// What the files of Transaction share (transaction.cpp: the attempt and its read point;
// transaction_reads.cpp: reads and writes; transaction_staging.cpp: planning and staging the
// commit; transaction_multi.cpp: its multi and outcome). Private to them.

#include "runtime/node_cache.hpp"
#include "stm/barging.hpp"
#include "stm/commit_layout.hpp"
#include "stm/transaction.hpp"

#include <cstddef>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace avout::detail {

/// The size of a point id: 16 hex digits of the session, '-', a 36-character UUID.
inline constexpr std::size_t point_size = 53;
/// The size of a history entry in an encoded head: zxid and length-prefixed point id.
inline constexpr std::size_t head_entry_size = 8 + 8 + point_size;

/// The retry of an attempt that found `ref` changed while it read (it reads no history then).
RetryAttempt outdated(const RefCore& ref);

/// What the stages of one commit share.
struct Transaction::Commit {
  // A written or commuted value under a fresh point for the commit.
  struct Staged {
    Entry* target;
    Point point;
    HeadRecord next;
    std::vector<Point> trimmed;              // erased in the background once landed
    std::vector<std::string> trimmed_nodes;  // ZooKeeper-held: removed by the multi itself
    std::optional<op::Create> in_multi;      // rule 11: created by the commit multi itself
    std::optional<Bytes> unstored;           // the value, until store() wrote it to its store
  };

  std::vector<Entry*> fixed;        // written or ensured: checked at the version read
  std::vector<Entry*> read_checks;  // only read, serializable: checked at the version read
  std::vector<Entry*> commuted;     // commuted only: recomputed from the newest value
  // Rule 10: every ref this commit changes respects an older transaction's claim, commuted
  // ones too (else a stream of commutes starves a claimant that writes the ref).
  std::vector<std::shared_ptr<RefCore>> claimable;
  std::vector<NodeCache::Lookup>
      tag_lookups;                 // of the claimable refs' tags, begun with their heads
  std::vector<BargeTag> tags;      // the claimable refs' tags, judged before values are stored
  std::size_t multi_bytes = 0;     // the multi's serialized size so far (rule 11)
  std::vector<Staged> written;     // values of written refs, stored once per commit
  std::vector<Staged> recomputed;  // values of commuted refs, stored again each round
  std::vector<NodeStat> commuted_stats;  // the commuted heads this round recomputed from
  MultiResult result;                    // the multi's reply
  // Rule 16: markers of this thread's earlier commits, removed by this commit's multi.
  std::vector<std::string> carried;
  // Rule 16: trimmed value nodes and carried markers the multi found gone already, left out
  // of later rounds.
  std::set<std::string> gone;

  /// Validates `value` and stages it under a fresh point for `target`, whose head is `head`
  /// at `head_stat`: the next head, what it trims, and whether the multi creates the value.
  Staged stage(StmContext& stm, Entry* target, const HeadRecord& head, const NodeStat& head_stat,
               const Bytes& value);
  /// Rule 16: writes the staged values the multi does not create, one batch per store, the
  /// stores concurrently; durable and acknowledged on return (rule 7).
  static void store(StmContext& stm, std::vector<Staged>& staged);
  /// Erases values stored for an attempt that did not commit, in the background.
  static void discard(StmContext& stm, std::vector<Staged>& staged);

 private:
  // Sorts the points `next` trimmed into those the multi removes and those erased later.
  void place_trimmed(RefCore& ref, const std::vector<Point>& trimmed, Staged& staged,
                     std::size_t chroot);
  // Lets the multi create `value` while it fits and its store keeps it in ZooKeeper.
  void place_value(RefCore& ref, const Bytes& value, Staged& staged, std::size_t chroot);
};

/// One round's commit multi and where its parts start, and the refs whose claim it ends.
struct Transaction::Multi : CommitMulti {
  std::vector<std::shared_ptr<RefCore>> released;  // refs whose claim the commit ends
};

}  // namespace avout::detail
