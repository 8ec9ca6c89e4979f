#pragma once
// The type-independent machinery of refs and transactions (docs/transactions.md): ref heads in
// ZooKeeper, values at unique points in stores, one commit multi per transaction.

#include "runtime/node_cache.hpp"
#include "runtime/runtime.hpp"
#include "stm/speculation_gate.hpp"
#include "runtime/value_watcher.hpp"

#include <avout/backend.hpp>
#include <avout/deadline.hpp>
#include <avout/detail/ref_handle.hpp>
#include <avout/garbage_report.hpp>
#include <avout/zookeeper_session.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace avout::detail {

class BackgroundErasure;
class CallbackExecutor;
class NodeCache;
class StoreBatches;

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
/// True when `head` names `point`, as its newest value or in its history.
bool names(const HeadRecord& head, const Point& point);

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
class RefCore : public RefHandle, public std::enable_shared_from_this<RefCore> {
 public:
  RefCore(std::string name, std::shared_ptr<ReferenceData> data, Store& store,
          std::size_t max_value_size, StmContext& stm);
  const std::string& name() const override { return name_; }
  const std::string& head_path() const { return head_path_; }
  ReferenceData& data() { return *data_; }
  /// The store that made data(): commits write its values through it, batched per store.
  Store& store() { return store_; }
  std::size_t max_value_size() const { return max_value_size_; }
  StmContext& stm() { return stm_; }

  /// The newest committed value (outside transactions).
  Bytes read_latest();
  // RefHandle, the calls of Ref<T> (ref_handle.cpp).
  Bytes deref() override;
  Bytes read_in_transaction() override;
  std::vector<Bytes> deref_together(const std::vector<RefHandle*>& refs) override;
  void write(Bytes value) override;
  Bytes ensure() override;
  Bytes commute(std::function<Bytes(const Bytes&)> function) override;
  void require_kind(const Bytes& sample) override;
  void set_validator(std::function<bool(const Bytes&)> validator) override;
  /// Throws ValidationError when the validator rejects `value`.
  void validate(const Bytes& value);
  /// Notes a history miss in this process (Transaction also reports it to other processes).
  void count_history_miss() { ++history_misses_; }
  /// History misses seen in this process (they grow the kept history, like Clojure's faults;
  /// other processes' misses arrive through the head's child version).
  std::uint32_t history_misses() const { return history_misses_; }
  /// See ValueWatcher.
  void add_watch(const std::string& key, BytesWatch watch) override {
    watcher_->add(key, std::move(watch));
  }
  /// See ValueWatcher.
  void remove_watch(const std::string& key) override { watcher_->remove(key); }

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

/// The transaction engine of one client: its refs and transaction counters, on the
/// client's Runtime (session, paths, ids, value cache).
class StmContext {
 public:
  explicit StmContext(Runtime& runtime);
  ~StmContext();
  StmContext(const StmContext&) = delete;
  StmContext& operator=(const StmContext&) = delete;
  /// What the client's engines share.
  Runtime& runtime() { return runtime_; }
  /// Trimmed values waiting to be erased off the committing threads (rule 16).
  BackgroundErasure& erasures() { return *erasures_; }
  /// Writes and erases a commit's values, a batch per store, the stores concurrently.
  StoreBatches& batches() { return *batches_; }

  /// Whether dosyncs' first attempts may commit speculatively now.
  SpeculationGate& speculation() { return speculation_; }

  /// A new transaction age for a dosync whose first read point is `read_point`.
  TransactionAge new_age(std::int64_t read_point);

  /// Attaches to the ref `name` in `store`, creating it with `initial` when it is new. All
  /// handles of one name share one RefCore per client (rule 14).
  std::shared_ptr<RefCore> attach(const std::string& name, Store& store, const Bytes& initial);

  /// See Client::gc.
  GarbageReport collect_garbage(const std::vector<Store*>& stores,
                                std::chrono::milliseconds marker_grace);

  /// Transactions committed, attempts retried (for benchmarks and tests).
  std::uint64_t commits() const { return commits_; }
  std::uint64_t retries() const { return retries_; }
  void count_commit() { ++commits_; }
  void count_retry() { ++retries_; }

 private:
  Runtime& runtime_;
  std::atomic<std::uint64_t> ages_{0};

  void create_head(RefCore& ref, Store& store, const Bytes& initial);

  struct KnownRef {
    std::weak_ptr<RefCore> core;
    std::string store;  // its store's description
  };
  std::mutex refs_mutex_;
  std::unordered_map<std::string, KnownRef> refs_;  // name -> its one identity in this client

  std::atomic<std::uint64_t> commits_{0};
  std::atomic<std::uint64_t> retries_{0};
  SpeculationGate speculation_;
  std::unique_ptr<StoreBatches> batches_;
  std::unique_ptr<BackgroundErasure> erasures_;  // last: finishes before the rest goes
};

/// Thrown inside a transaction to unwind the user's function for another attempt. Not an
/// avout::Error: user code that catches avout::Error does not swallow it.
struct RetryAttempt {
  std::string reason;
  bool speculation = false;  ///< a speculative attempt found another commit first: no pause
};

/// The session id a point, marker or attempt id was written by; nullopt when the id has no
/// writer prefix (then gc never erases it).
std::optional<std::int64_t> writer_of(const std::string& id);

struct BargeState;  // barging.hpp

/// How a commit multi is sent, and what tells whether one whose reply was lost landed
/// (docs/transactions.md rules 2, 6).
struct Resolution {
  std::string marker;               ///< created by the multi's op 0: present exactly when it landed
  std::chrono::milliseconds grace;  ///< ClientOptions::marker_grace: gc leaves younger markers
  /// Asked once the marker's absence proves nothing (gc may have removed it), after a sync:
  /// true when a head the multi set names a point it wrote, so it landed. Empty: nothing does.
  std::function<bool()> written_named = {};
  /// The session generation the multi's points were written on: the multi goes out on that
  /// session or not at all (SessionExpired, nothing sent; gc may see their writer dead).
  std::optional<std::uint64_t> generation = std::nullopt;
};

/// Until when an answer that a commit's marker is absent proves the commit, sent at `sent`,
/// did not land: half the grace within which gc leaves markers alone (rule 6), judged on this
/// process's steady clock, as gc judges their age on ZooKeeper's.
std::chrono::steady_clock::time_point absence_proves_until(std::chrono::steady_clock::time_point sent,
                                                           std::chrono::milliseconds grace);

/// A definite "did it land?" for a multi sent at `sent` whose reply was lost (rule 6): true
/// when its marker is found, or later a head names what it wrote; false when the marker is
/// absent while that proves it (absence_proves_until); nullopt when neither can be told, or
/// ZooKeeper stays unreachable.
std::optional<bool> resolve_commit(ZooKeeperSession& session, const Resolution& resolution,
                                   std::chrono::steady_clock::time_point sent);

/// How long an owner keeps trying to find out what became of a request whose reply was lost
/// (resolving a commit, locating or settling an agent's send): three of the session timeouts
/// the server granted, after which it has expired a session that stayed away, and its
/// ephemeral nodes with it.
std::chrono::steady_clock::time_point resolution_deadline(const ZooKeeperSession& session);

/// Sends a multi whose op 0 creates `resolution.marker`: true when it was applied, false when
/// an operation failed (`result` tells which), nullopt when the outcome stayed unknown. A lost
/// reply is resolved (resolve_commit), never by sending the multi again. SessionExpired: the
/// session of `resolution.generation` has ended and nothing was sent.
std::optional<bool> commit_with_marker(ZooKeeperSession& session,
                                       const std::vector<Operation>& operations,
                                       const Resolution& resolution, MultiResult* result = nullptr);

/// commit_with_marker for a multi whose operations from `first_cleanup` on are clean-up
/// (rule 16): removals at version 0 of nodes that may be gone already (earlier commits'
/// markers, trimmed ZooKeeper-held values). A failing one is no conflict (ZooKeeper reports
/// the first failing op, so every op before it succeeded): `gone` hears its path and the
/// multi goes again without it; nothing else is retried. `result` tells a failure's op.
std::optional<bool> commit_with_cleanup(ZooKeeperSession& session, std::vector<Operation> operations,
                                        std::size_t first_cleanup, const Resolution& resolution,
                                        MultiResult& result,
                                        const std::function<void(const std::string&)>& gone);

/// One attempt of a transaction: its read point, the refs it read, wrote, ensured and
/// commuted, and the commit.
class Transaction {
 public:
  /// The transaction running on this thread, or null.
  static Transaction* current();
  /// The runtime of the client this transaction runs on (white-box tests reach its parts here).
  Runtime& runtime() const { return runtime_; }

  /// `speculate`: commit over the heads cached as of this client's last commit, without a
  /// read point of its own, when there is such a commit and `prefetch` is empty.
  Transaction(StmContext& stm, const std::vector<std::shared_ptr<RefCore>>& prefetch,
              BargeState& barge, bool speculate = false);
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
  /// Runs `body` and commits; an exception of either leaves only once a speculative
  /// attempt's reads are confirmed current (else RetryAttempt: no outcome rests on a stale
  /// snapshot).
  void run(const std::function<void()>& body);

 private:
  struct Entry {
    std::shared_ptr<RefCore> ref;
    NodeStat head_stat;
    HeadRecord head;
    std::optional<Bytes> value;  // in-transaction value once read or written
    bool written = false;
    bool ensured = false;
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
  // The stages of commit(), sharing one Commit (transaction.cpp).
  struct Commit;
  struct Multi;
  // Retries now when a written or ensured head is known to have changed since it was read.
  void give_up_if_doomed(const Commit& commit) const;
  bool plan_commit(Commit& commit);
  void stage_written(Commit& commit);
  bool stage_commuted(Commit& commit);
  // Turns a speculative attempt into a usual one at a read point of its own (its first commute).
  void leave_speculation();
  // RetryAttempt unless a speculative attempt whose multi was not sent read what is still
  // current (a sync and the clock); returns at once for any other attempt.
  void confirm_speculative_reads();
  Multi build_multi(Commit& commit);
  bool apply_result(Commit& commit, const Multi& multi);
  void keep_written_heads(const Commit& commit, const Multi& multi);
  bool heads_name_points(const Commit& commit);
  void after_landing(Commit& commit, const Multi& multi);

  struct CommitAddition {
    std::vector<Operation> operations;
    std::function<void(const std::vector<OperationResult>&)> on_commit;
    std::function<void()> on_failure;
  };

  StmContext& stm_;
  Runtime& runtime_;  // stm_'s
  BargeState& barge_;
  std::vector<CommitAddition> additions_;
  std::vector<std::shared_ptr<RefCore>> claims_;  // refs written or ensured, even if it failed
  Transaction* outer_;
  std::uint64_t generation_;
  // Rule 2's pipeline: the sync and the clock's stat, awaited by await_read_point.
  std::future<void> synced_;
  std::future<std::optional<NodeStat>> clock_;
  std::int64_t read_point_ = 0;
  bool read_point_known_ = false;
  // A speculative attempt, until its multi is sent: read_point_ is this client's last
  // commit, unconfirmed; the commit multi sets the clock only at the version it gave it.
  bool speculative_ = false;
  std::int32_t clock_version_ = 0;
  std::exception_ptr read_failure_;  // what awaiting the read point threw
  std::string marker_path_;  // the commit's outcome marker
  std::map<RefCore*, Entry> entries_;
};

}  // namespace avout::detail
