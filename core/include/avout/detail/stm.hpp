#pragma once
// The type-independent machinery of refs and transactions (docs/transactions.md): ref heads in
// ZooKeeper, values at unique points in stores, one commit multi per transaction.

#include <avout/backend.hpp>
#include <avout/detail/value_watcher.hpp>
#include <avout/zookeeper_session.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace avout {

/// What Client::gc removed.
struct GarbageReport {
  std::size_t refs_scanned = 0;     ///< ref heads looked at
  std::size_t points_erased = 0;    ///< unreferenced values of dead writers erased
  std::size_t markers_removed = 0;  ///< commit markers past their grace period removed
};

}  // namespace avout

namespace avout::detail {

class BackgroundErasure;
class CallbackExecutor;
class NodeCache;
class PendingMarkers;

/// One older committed version of a ref: the zxid of its commit and where its value is.
struct HeadEntry {
  std::int64_t zxid = 0;  ///< commit zxid
  Point point;            ///< where the value is stored
};

/// A ref head's data. The newest version's commit zxid is the head node's own mzxid.
struct HeadRecord {
  Point newest;                    ///< point of the newest committed value
  std::vector<HeadEntry> history;  ///< older versions, newest first
  std::uint32_t keep = 0;          ///< how many older versions commits keep (adaptive history)
};

/// Encodes a head record.
Bytes encode_head(const HeadRecord& record);
/// Decodes a head record; CodecError naming `path` when malformed.
HeadRecord decode_head(const Bytes& bytes, const std::string& path);

/// Settings of the transaction engine.
struct StmOptions {
  std::size_t retry_limit = 10000;  ///< attempts before RetryLimitExceeded
  std::size_t max_history = 10;     ///< older versions each head keeps for snapshot reads
  std::size_t min_history = 0;      ///< versions each head keeps before any history miss
  bool barging = true;              ///< false: old transactions never claim their refs
  std::size_t barge_after = 3;      ///< failed attempts after which a transaction tags its refs
  std::size_t yield_limit = 100;    ///< most attempts one dosync gives way to older claimants
};

/// The age of one dosync across its attempts (transactions.md rule 10): the older transaction wins.
struct TransactionAge {
  std::int64_t first_read_point = 0;  ///< read point of its first attempt
  std::int64_t session = 0;           ///< session that started it
  std::uint64_t counter = 0;          ///< per-client sequence number
  /// Older first: lower read point, then session, then counter.
  auto operator<=>(const TransactionAge&) const = default;
};

/// Encodes a barging tag: the age of the transaction that claims a ref (empty: unclaimed).
Bytes encode_tag(const TransactionAge& age);
/// Decodes a barging tag; nullopt for an unclaimed (empty) tag; CodecError when malformed.
std::optional<TransactionAge> decode_tag(const Bytes& bytes, const std::string& path);

class StmContext;

/// One ref: its head node, its value store, its validator and watches.
class RefCore : public std::enable_shared_from_this<RefCore> {
 public:
  RefCore(std::string name, std::shared_ptr<ReferenceData> data, Store& store,
          std::size_t max_value_size, StmContext& stm);
  const std::string& name() const { return name_; }
  const std::string& head_path() const { return head_path_; }
  ReferenceData& data() { return *data_; }
  /// The store that made data(): commits write its values through it, batched per store.
  Store& store() { return store_; }
  std::size_t max_value_size() const { return max_value_size_; }
  StmContext& stm() { return stm_; }

  /// The newest committed value (outside transactions).
  Bytes read_latest();
  /// CodecError naming both kinds when the stored value is another kind than `sample`.
  void require_kind(const Bytes& sample);
  /// Installs a validator for this ref in this client (empty: none).
  void set_validator(std::function<bool(const Bytes&)> validator);
  /// Throws ValidationError when the validator rejects `value`.
  void validate(const Bytes& value);
  /// Notes a history miss in this process (Transaction also reports it to other processes).
  void count_history_miss() { ++history_misses_; }
  /// History misses seen in this process (they grow the kept history, like Clojure's faults;
  /// other processes' misses arrive through the head's child version).
  std::uint32_t history_misses() const { return history_misses_; }
  /// See ValueWatcher.
  void add_watch(const std::string& key, BytesWatch watch) { watcher_->add(key, std::move(watch)); }
  /// See ValueWatcher.
  void remove_watch(const std::string& key) { watcher_->remove(key); }

 private:
  std::string name_;
  std::string head_path_;
  std::shared_ptr<ReferenceData> data_;
  Store& store_;
  std::size_t max_value_size_;
  StmContext& stm_;
  std::mutex validator_mutex_;
  std::function<bool(const Bytes&)> validator_;
  std::shared_ptr<ValueWatcher> watcher_;
  std::atomic<std::uint32_t> history_misses_{0};
};

/// Per-client state of the transaction engine: paths, the session, a cache of immutable
/// values by point, and statistics.
class StmContext {
 public:
  StmContext(ZooKeeperSession& session, const std::string& root,
             std::shared_ptr<CallbackExecutor> callbacks, StmOptions options);
  ~StmContext();
  StmContext(const StmContext&) = delete;
  StmContext& operator=(const StmContext&) = delete;
  /// Heads and tags this client has read, kept valid by watches (docs/transactions.md rule 12).
  NodeCache& nodes() { return *nodes_; }
  /// Trimmed values waiting to be erased off the committing threads (rule 16).
  BackgroundErasure& erasures() { return *erasures_; }
  /// Markers of this client's landed commits, removed by its next commit multi (rule 16).
  PendingMarkers& pending_markers() { return *pending_markers_; }
  ZooKeeperSession& session() { return session_; }
  const StmOptions& options() const { return options_; }
  const std::string& clock_path() const { return clock_path_; }
  std::string head_path(const std::string& name) const { return heads_root_ + name; }
  std::string marker_path(const std::string& attempt) const;
  std::string tag_path(const std::string& name) const { return tags_root_ + name; }
  std::string session_node(std::int64_t session) const;
  const std::string& heads_root() const { return heads_root_; }
  const std::string& markers_root() const { return markers_root_; }
  const std::string& sessions_root() const { return sessions_root_; }
  std::shared_ptr<CallbackExecutor> callbacks() const { return callbacks_; }

  /// A fresh unique point (or attempt id) that names the current session as its writer,
  /// so gc can tell whether the writer may still commit it (docs/transactions.md rule 9).
  Point new_point();
  /// Makes sure this session's liveness node exists (once per session).
  void announce_session();
  /// A new transaction age for a dosync whose first read point is `read_point`.
  TransactionAge new_age(std::int64_t read_point);
  /// True when the session that owns `age` is still alive (its liveness node exists).
  bool alive(const TransactionAge& age);

  /// Attaches to the ref `name` in `store`, creating it with `initial` when it is new. All
  /// handles of one name share one RefCore per client (rule 14).
  std::shared_ptr<RefCore> attach(const std::string& name, Store& store, const Bytes& initial);
  /// The name stores keep the values of the `kind` ("ref", "agent") `name` under: unique per
  /// deployment (chroot and root) and per kind, so nothing else ever shares its keys (rule 13).
  std::string value_key(const std::string& kind, const std::string& name) const;

  /// The value at `point` of `ref`, from the cache or the store (values never change).
  /// nullopt when the store has no value there.
  std::optional<Bytes> fetch(RefCore& ref, const Point& point) { return fetch_value(ref.data(), point); }
  /// The same for any version set (refs, agents).
  std::optional<Bytes> fetch_value(ReferenceData& data, const Point& point);
  /// Where agents keep their `kind` ("heads", "queues") nodes for the agent `name`.
  std::string agent_path(const std::string& kind, const std::string& name) const {
    return root_ + "/agents/" + kind + name;
  }
  /// Remembers a value just written at `point`.
  void remember(const Point& point, const Bytes& value);

  /// See Client::gc.
  GarbageReport collect_garbage(const std::vector<Store*>& stores,
                                std::chrono::milliseconds marker_grace);

  /// Transactions committed, attempts retried (for benchmarks and tests).
  std::uint64_t commits() const { return commits_; }
  std::uint64_t retries() const { return retries_; }
  void count_commit() { ++commits_; }
  void count_retry() { ++retries_; }

 private:
  ZooKeeperSession& session_;
  std::string root_;
  std::string clock_path_;
  std::string heads_root_;
  std::string markers_root_;
  std::string tags_root_;
  std::string sessions_root_;
  std::shared_ptr<CallbackExecutor> callbacks_;
  StmOptions options_;
  std::unique_ptr<NodeCache> nodes_;
  std::mutex announce_mutex_;
  std::uint64_t announced_generation_ = ~std::uint64_t{0};
  std::atomic<std::uint64_t> ages_{0};

  void create_head(RefCore& ref, Store& store, const Bytes& initial);

  struct KnownRef {
    std::weak_ptr<RefCore> core;
    std::string store;  // its store's description
  };
  std::mutex refs_mutex_;
  std::unordered_map<std::string, KnownRef> refs_;  // name -> its one identity in this client

  std::mutex cache_mutex_;
  std::unordered_map<std::string, Bytes> cache_;  // point id -> value
  std::atomic<std::uint64_t> commits_{0};
  std::atomic<std::uint64_t> retries_{0};
  std::unique_ptr<PendingMarkers> pending_markers_;
  std::unique_ptr<BackgroundErasure> erasures_;  // last: finishes before the rest goes
};

/// Thrown inside a transaction to unwind the user's function for another attempt. Not an
/// avout::Error: user code that catches avout::Error does not swallow it.
struct RetryAttempt {
  std::string reason;
};

/// The session id a point, marker or attempt id was written by; nullopt when the id has no
/// writer prefix (then gc never erases it).
std::optional<std::int64_t> writer_of(const std::string& id);

struct BargeState;  // barging.hpp

/// A definite "did it land?" for a multi whose reply was lost (docs/transactions.md rule 6):
/// its marker, created in op 0, exists exactly when it was applied. nullopt when ZooKeeper
/// stays unreachable.
std::optional<bool> resolve_commit(ZooKeeperSession& session, const std::string& marker);

/// Sends a multi whose op 0 creates `marker`: true when it was applied, false when an
/// operation failed (`result` tells which), nullopt when the outcome stayed unknown. A lost
/// reply is resolved through the marker, never by sending the multi again.
std::optional<bool> commit_with_marker(ZooKeeperSession& session,
                                       const std::vector<Operation>& operations,
                                       const std::string& marker, MultiResult* result = nullptr);

/// The least age of a commit marker gc removes: the longest time an owner may still be
/// resolving it (rule 6), whatever grace a caller asks for.
std::chrono::milliseconds minimum_marker_grace(const ZooKeeperSession& session);

/// Runs `body` as a transaction with retries (Client::dosync without the result type).
void run_transaction(StmContext& stm, const std::function<void()>& body);

/// One attempt of a transaction: its read point, the refs it read, wrote, ensured and
/// commuted, and the commit.
class Transaction {
 public:
  /// The transaction running on this thread, or null.
  static Transaction* current();

  Transaction(StmContext& stm, const std::vector<std::shared_ptr<RefCore>>& prefetch,
              BargeState& barge);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

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
  /// Adds operations to this attempt's commit multi (after the heads and tags, before the
  /// clock): agent sends, lock guards. `on_commit` gets their results once the commit landed;
  /// `on_failure` (optional) is thrown instead of a retry when one of them made it fail.
  void add_to_commit(std::vector<Operation> operations,
                     std::function<void(const std::vector<OperationResult>&)> on_commit,
                     std::function<void()> on_failure = {});
  /// Tags the refs this attempt wrote or ensured with its age, so younger transactions
  /// yield to the next attempt (called after a failed attempt once it is old enough).
  void claim_refs();
  StmContext& stm() { return stm_; }

 private:
  struct Entry {
    std::shared_ptr<RefCore> ref;
    NodeStat head_stat;
    HeadRecord head;
    std::optional<Bytes> value;  // in-transaction value once read or written
    bool written = false;
    bool ensured = false;
    std::vector<std::function<Bytes(const Bytes&)>> commutes;
  };
  Entry& entry(RefCore& ref);
  void load_head(Entry& entry, NodeData node);
  Bytes value_at_read_point(Entry& entry, bool newest_on_miss);
  // A history miss: counted here and reported to every writer of the ref.
  void report_history_miss(RefCore& ref);
  void require_unchanged_since_read_point(const Entry& entry);
  void check_session() const;
  // The stages of commit(), sharing one Commit (transaction.cpp).
  struct Commit;
  struct Multi;
  bool plan_commit(Commit& commit);
  void stage_written(Commit& commit);
  bool stage_commuted(Commit& commit);
  Multi build_multi(Commit& commit);
  bool apply_result(Commit& commit, const Multi& multi);
  void after_landing(Commit& commit, const Multi& multi);

  struct CommitAddition {
    std::vector<Operation> operations;
    std::function<void(const std::vector<OperationResult>&)> on_commit;
    std::function<void()> on_failure;
  };

  StmContext& stm_;
  BargeState& barge_;
  std::vector<CommitAddition> additions_;
  std::vector<std::shared_ptr<RefCore>> claims_;  // refs written or ensured, even if it failed
  Transaction* outer_;
  std::uint64_t generation_;
  std::int64_t read_point_ = 0;
  std::string marker_path_;  // the commit's outcome marker
  std::map<RefCore*, Entry> entries_;
};

}  // namespace avout::detail
