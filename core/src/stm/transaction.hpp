#pragma once
// One attempt of a transaction (docs/transactions.md): its read point, its reads, writes,
// ensures and commutes, and its one commit multi. The stages are spread over
// transaction*.cpp; agents and locks see only stm/participant.hpp.

#include "records/stm_records.hpp"
#include "runtime/node_cache.hpp"
#include "runtime/runtime.hpp"
#include "stm/participant.hpp"
#include "stm/ref_core.hpp"
#include "stm/stm_context.hpp"

#include <avout/backend.hpp>
#include <avout/zookeeper_session.hpp>

#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace avout::detail {

/// Thrown inside a transaction to unwind the user's function for another attempt. Not an
/// avout::Error: user code that catches avout::Error does not swallow it.
struct RetryAttempt {
  std::string reason;
  /// For the metrics, and the next attempt's kind: after `confirmation`, or `view_changed`
  /// twice in a row, it runs synced.
  RetryCause cause = RetryCause::conflict;
  bool waited = false;  ///< a barging_yield that waited for the claim to move: retry at once
};

/// How an attempt reads (docs/transactions.md, "Isolation").
enum class AttemptKind {
  snapshot,   ///< rules 2-3: a synced read point; only written and ensured heads checked
  synced,     ///< rules 2-3, and the multi checks every head read (V1): serializable
  validated,  ///< no read point: newest heads from the cache or watched gets (V2), kept one
              ///< consistent view (V3), all checked by the multi (V4) or confirmed (V5)
};

struct BargeState;  // barging.hpp

/// One attempt of a transaction: its read point, the refs it read, wrote, ensured and
/// commuted, and the commit.
class Transaction : public OpenTransaction {
 public:
  /// The transaction running on this thread, or null.
  static Transaction* current();
  /// The runtime of the client this transaction runs on (white-box tests reach its parts here).
  Runtime& runtime() const { return runtime_; }

  /// An attempt of kind `kind`, reading `prefetch` (the previous attempt's refs) ahead.
  Transaction(StmContext& stm, const std::vector<std::shared_ptr<RefCore>>& prefetch,
              BargeState& barge, AttemptKind kind);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  /// Reads the heads of those of `refs` this attempt has not read yet, together: one round
  /// trip (with the read point's, when that is not in yet) instead of one per ref.
  void read_heads(const std::vector<RefCore*>& refs);
  /// Reads together the values, as of the read point, of those of `refs` whose heads this
  /// attempt read and whose values it has not: one round trip per store, the stores at once.
  /// read() then finds them cached.
  void prefetch_values(const std::vector<RefCore*>& refs);
  /// The ref's value in this transaction (its own write, else as of the read point).
  const Bytes& read(RefCore& ref);
  /// Sets the ref's value in this transaction.
  void write(RefCore& ref, Bytes value);
  /// Protects the ref from writes by others until commit; returns its value.
  const Bytes& ensure(RefCore& ref);
  /// Applies `function` now and again at commit to the newest value; returns its result now.
  Bytes commute(RefCore& ref, std::function<Bytes(const Bytes&)> function);
  /// Commits, or throws RetryAttempt (ValidationError, backend errors pass through).
  void commit();
  /// The refs this attempt touched (prefetched by the next attempt).
  std::vector<std::shared_ptr<RefCore>> touched() const;
  /// Tags the refs this attempt wrote or ensured with its age, so younger transactions
  /// yield to the next attempt (called after a failed attempt once it is old enough).
  void claim_refs();
  StmContext& stm() { return stm_; }
  /// Runs `body` and commits; a read-only outcome or an exception thrown before the multi
  /// leaves a validated attempt only once its reads are confirmed current (V5; else
  /// RetryAttempt with cause `confirmation`: no outcome rests on a stale view).
  void run(const std::function<void()>& body);
  /// True once the attempt's commit had something to write (it sent, or was to send, a multi).
  bool wrote() const { return wrote_; }

 private:
  struct Entry {
    std::shared_ptr<RefCore> ref;
    NodeStat head_stat;
    HeadRecord head;
    std::optional<Bytes> value;  // in-transaction value once read or written
    bool written = false;
    bool ensured = false;
    bool read = false;  // the body read its value (before any commute)
    std::vector<std::function<Bytes(const Bytes&)>> commutes;
    // Where the head was read from: tells whether it has changed since (NodeCache).
    NodeCache::Lookup head_read;
    // The ref's barging tag, looked up in the head's round trip: a commit needs it (rule 10)
    // and would otherwise read it in a round trip of its own.
    NodeCache::Lookup tag;
  };
  // A ref's head and tag lookups, begun before the read point is awaited.
  struct Lookups {
    NodeCache::Lookup head;
    NodeCache::Lookup tag;
  };
  // Waits for the read point (once): sets it, starts rule 12's reads again, dates the
  // transaction for barging. Throws what waiting threw, on this call and every later one.
  void await_read_point();
  // Sends rule 2's sync and the clock's read, for await_read_point.
  void request_read_point();
  Entry& entry(RefCore& ref);
  // Commuted, and neither read by the body, written nor ensured: recomputed at commit.
  static bool commute_only(const Entry& target) {
    return !target.commutes.empty() && !target.read && !target.written && !target.ensured;
  }
  Lookups begin_lookups(const RefCore& ref);
  // The entry of `ref` from its lookups, judged at the read point (awaited before).
  Entry finish_entry(std::shared_ptr<RefCore> ref, Lookups& lookups);
  Bytes value_at_read_point(Entry& entry, bool newest_on_miss);
  // The point of the entry's version as of the read point; null when its history is too short.
  const Point* point_at_read_point(const Entry& entry) const;
  // Reads into the value cache, a batch per store, the values at these points of their refs
  // that are not cached yet; one alone is left to be read where it is needed.
  void cache_values(const std::vector<std::pair<RefCore*, Point>>& wanted);
  // A history miss: counted here and reported to every writer of the ref.
  void report_history_miss(RefCore& ref);
  void require_unchanged_since_read_point(const Entry& entry);
  void check_session() const;
  // The stages of commit(), sharing one Commit (transaction_stages.hpp).
  struct Commit;
  struct Multi;
  // Retries now when a written or ensured head is known to have changed since it was read.
  void give_up_if_doomed(const Commit& commit);
  bool plan_commit(Commit& commit);
  void stage_written(Commit& commit);
  bool stage_commuted(Commit& commit);
  // V3: RetryAttempt unless the heads a validated attempt read are one consistent view now
  // (kept heads that no longer prove it are read again, watched). No-op for other kinds.
  void require_consistent_view();
  // V5: RetryAttempt unless a validated attempt whose multi was not sent read what is still
  // current (a sync, the clock and the heads not watched); returns at once for other kinds.
  void confirm_reads();
  // V6: reads the heads of `entries` ahead, watched, for the retry.
  void prefetch_heads(const std::vector<const Entry*>& entries);
  Multi build_multi(Commit& commit);
  // Rule 11: the multi's size before the values ZooKeeper would hold ride in it.
  std::size_t estimate_multi_bytes(const Commit& commit) const;
  bool apply_result(Commit& commit, const Multi& multi);
  // V8: the heads this round's multi checks or sets, at the versions it expects.
  std::vector<SiblingMultis::Key> expected_heads(const Commit& commit) const;
  std::optional<bool> send_multi(Commit& commit, const Multi& multi);
  bool after_conflict(Commit& commit, const Multi& multi);
  void clean_up_after_landing(Commit& commit, const Multi& multi);
  void keep_written_heads(const Commit& commit, const Multi& multi);
  bool heads_name_points(const Commit& commit);
  void after_landing(Commit& commit, const Multi& multi);

  StmContext& stm_;
  Runtime& runtime_;  // stm_'s
  BargeState& barge_;
  std::vector<std::shared_ptr<RefCore>> claims_;  // refs written or ensured, even if it failed
  Transaction* outer_;
  std::uint64_t generation_;
  // Rule 2's pipeline: the sync and the clock's stat, awaited by await_read_point.
  std::future<void> synced_;
  std::future<std::optional<NodeStat>> clock_;
  std::int64_t read_point_ = 0;
  bool read_point_known_ = false;
  AttemptKind kind_;
  // A validated attempt has no read point: read_point_ is the largest zxid, so that every
  // head counts as current (its newest entry) until the multi or V5 proves it.
  bool validated() const { return kind_ == AttemptKind::validated; }
  bool multi_sent_ = false;  // V5 judges only what was decided before the multi
  bool wrote_ = false;
  std::exception_ptr read_failure_;  // what awaiting the read point threw
  std::string marker_path_;          // the commit's outcome marker
  std::map<RefCore*, Entry> entries_;
};

}  // namespace avout::detail
