#include "stm/background_erasure.hpp"
#include "stm/barging.hpp"
#include "zk/multi_size.hpp"
#include "runtime/node_cache.hpp"
#include "runtime/pending_markers.hpp"
#include "stm/transaction.hpp"
#include "runtime/marked_commit.hpp"
#include "stm/value_batches.hpp"
#include "runtime/zookeeper_held_values.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <chrono>
#include <future>
#include <limits>
#include <set>
#include <thread>
#include <utility>
#include <variant>

namespace avout::detail {

namespace {
thread_local Transaction* running = nullptr;

// A point id: 16 hex digits of the session, '-', a 36-character UUID.
constexpr std::size_t point_size = 53;
// A history entry in an encoded head: zxid and length-prefixed point id.
constexpr std::size_t head_entry_size = 8 + 8 + point_size;

// A speculative attempt found `ref` moved past this client's last commit.
RetryAttempt outdated(const RefCore& ref) {
  return RetryAttempt{"ref " + ref.name() + " changed after this client's last commit", true};
}

// A speculative commit sets the clock at the version this client's last commit gave it. The
// clock's int32 version wraps after 2^31 commits, and a wrapped clock is only a clock: at the
// last version (the set would wrap it, which the session refuses, rule 1), at -1 (which asks
// for no version at all) and at every wrapped, negative version, commits go the usual way,
// whose clock write names no version, until the clock's version is positive again.
bool speculates_at(std::int32_t clock_version) {
  return clock_version >= 0 && clock_version < std::numeric_limits<std::int32_t>::max();
}

}  // namespace

Transaction* Transaction::current() { return running; }

OpenTransaction* OpenTransaction::current() { return running; }

Transaction::Transaction(StmContext& stm, const std::vector<std::shared_ptr<RefCore>>& prefetch,
                         BargeState& barge, bool speculate)
    : stm_(stm),
      runtime_(stm.runtime()),
      barge_(barge),
      outer_(running),
      generation_(runtime_.session().generation()) {
  // A speculative attempt reads as of this client's last commit, whose heads it has cached,
  // and leaves rule 2's read point to its commit multi: that sets the clock only at the
  // version this client's commit gave it, so it lands only if no commit came after, when
  // everything the body read is still current. That commit, which may be long past, does not
  // date it for barging (rule 10): until a read point of its own does, it is the youngest.
  const auto own = speculate && prefetch.empty() ? runtime_.nodes().last_own_commit() : std::nullopt;
  if (own && speculates_at(own->clock_version)) {
    speculative_ = true;
    read_point_ = own->zxid;
    clock_version_ = own->clock_version;
    read_point_known_ = true;
    running = this;
    return;
  }
  // Rule 2: sync, then the read point, then the heads, pipelined on one session.
  // Heads come from the node cache (rule 12): known ones cost nothing, the others are read
  // in the same pipeline; either way they are judged only once the read point is known. The
  // read point is awaited when first needed, so the body's first head read rides in the same
  // round trip as the sync and the clock.
  std::vector<Lookups> pending;
  pending.reserve(prefetch.size());
  for (const auto& ref : prefetch) pending.push_back(begin_lookups(*ref));
  request_read_point();
  if (!prefetch.empty()) {
    await_read_point();
    for (std::size_t i = 0; i < prefetch.size(); ++i) {
      entries_.emplace(prefetch[i].get(), finish_entry(prefetch[i], pending[i]));
    }
    check_session();
  }
  running = this;
}

void Transaction::request_read_point() {
  auto& session = runtime_.session();
  synced_ = session.sync_async(runtime_.layout().stm_clock());
  clock_ = session.exists_async(runtime_.layout().stm_clock());
  read_point_known_ = false;
}

void Transaction::await_read_point() {
  if (read_point_known_) return;
  if (read_failure_) std::rethrow_exception(read_failure_);
  try {
    auto& session = runtime_.session();
    auto clock_stat = session.wait(clock_);  // replies come in order: the sync's is in too
    session.wait(synced_);
    if (!clock_stat) throw BackendError("stm clock " + runtime_.layout().stm_clock() + " is missing");
    read_point_ = clock_stat->mzxid;
    check_session();
  } catch (...) {
    // A body that swallowed this must not get a read point on its next read either (the
    // futures are spent); and its refs never joined the attempt, so nothing is committed.
    read_failure_ = std::current_exception();
    throw;
  }
  read_point_known_ = true;
  // Heads this thread's last commit kept unwatched and the read point no longer proves
  // current are read again now, in one pipeline, before the body asks for them.
  runtime_.nodes().rearm_stale(read_point_);
  if (!barge_.age) barge_.age = stm_.new_age(read_point_);
}

Transaction::~Transaction() { running = outer_; }

void Transaction::check_session() const {
  if (runtime_.session().generation() != generation_) {
    throw RetryAttempt{"the ZooKeeper session was renewed during the attempt"};
  }
}

Transaction::Lookups Transaction::begin_lookups(const RefCore& ref) {
  return Lookups{runtime_.nodes().begin(ref.head_path()), begin_tag(stm_, ref)};
}

Transaction::Entry Transaction::finish_entry(std::shared_ptr<RefCore> ref, Lookups& lookups) {
  Entry fresh;
  fresh.ref = std::move(ref);
  const NodeData node = runtime_.nodes().finish(lookups.head, read_point_);
  if (speculative_ && node.stat.mzxid > read_point_) throw outdated(*fresh.ref);
  fresh.head_stat = node.stat;
  fresh.head = decode_head(node.data, fresh.ref->head_path());
  fresh.tag = std::move(lookups.tag);
  fresh.head_read = std::move(lookups.head);
  return fresh;
}

void Transaction::read_heads(const std::vector<RefCore*>& refs) {
  std::vector<std::pair<RefCore*, Lookups>> pending;
  for (RefCore* ref : refs) {
    const bool known = entries_.contains(ref) ||
                       std::any_of(pending.begin(), pending.end(), [&](const auto& p) { return p.first == ref; });
    if (!known) pending.emplace_back(ref, begin_lookups(*ref));  // sent before awaiting the read point
  }
  if (pending.empty()) return;
  await_read_point();
  for (auto& [ref, lookups] : pending) entries_.emplace(ref, finish_entry(ref->shared_from_this(), lookups));
  check_session();
}

Transaction::Entry& Transaction::entry(RefCore& ref) {
  read_heads({&ref});
  return entries_.at(&ref);
}

const Point* Transaction::point_at_read_point(const Entry& target) const {
  if (target.head_stat.mzxid <= read_point_) return &target.head.newest;
  for (const auto& older : target.head.history) {
    if (older.zxid <= read_point_) return &older.point;
  }
  return nullptr;
}

void Transaction::prefetch_values(const std::vector<RefCore*>& refs) {
  std::vector<std::pair<RefCore*, Point>> wanted;
  for (RefCore* ref : refs) {
    const auto found = entries_.find(ref);
    if (found == entries_.end() || found->second.value) continue;
    // No version old enough: read() retries or takes the newest, as it decides.
    if (const Point* point = point_at_read_point(found->second)) wanted.emplace_back(ref, *point);
  }
  cache_values(wanted);
}

void Transaction::cache_values(const std::vector<std::pair<RefCore*, Point>>& wanted) {
  std::vector<StoreReads> batches;
  for (const auto& one : wanted) {
    const Point& point = one.second;
    if (runtime_.has_value(point)) continue;
    auto& reads = batch_for(batches, &one.first->store()).reads;
    if (std::none_of(reads.begin(), reads.end(), [&](const PointRead& r) { return r.point == point; })) {
      reads.push_back(PointRead{&one.first->data(), point});
    }
  }
  if (batches.empty() || (batches.size() == 1 && batches.front().reads.size() == 1)) return;  // read() asks alone
  stm_.batches().read(batches);
  for (const auto& batch : batches) {
    for (std::size_t i = 0; i < batch.reads.size(); ++i) {
      // A missing value is judged where it is read (rule 8).
      if (batch.values[i]) runtime_.remember(batch.reads[i].point, *batch.values[i]);
    }
  }
}

Bytes Transaction::value_at_read_point(Entry& target, bool newest_on_miss) {
  const Point* point = point_at_read_point(target);
  if (point == nullptr) {
    if (!newest_on_miss) {
      report_history_miss(*target.ref);
      throw RetryAttempt{"ref " + target.ref->name() + ": no version old enough in its history"};
    }
    point = &target.head.newest;
  }
  if (auto value = runtime_.fetch_value(target.ref->data(), *point)) return std::move(*value);
  // Rule 8: a missing value is a history miss only when the head moved past it.
  // Synced: a follower's stale head could still name a value the leader's head has dropped.
  runtime_.session().sync(target.ref->head_path());
  auto node = runtime_.session().get(target.ref->head_path());
  auto now = decode_head(node.data, target.ref->head_path());
  if (names(now, *point)) {
    throw BackendError("ref " + target.ref->name() + ": value at point " + point->id +
                       " is missing from its store while the head references it");
  }
  // A speculative attempt's head was stale: no older snapshot missed anything.
  if (speculative_) throw outdated(*target.ref);
  if (newest_on_miss) {
    // A commute only needs some recent value now (commit recomputes from the newest), so a
    // trimmed one is replaced by the newest instead of costing a retry of the whole body.
    for (int reread = 0; reread < 100; ++reread) {
      if (auto value = runtime_.fetch_value(target.ref->data(), now.newest)) return std::move(*value);
      now = decode_head(runtime_.session().get(target.ref->head_path()).data, target.ref->head_path());
    }
  }
  report_history_miss(*target.ref);
  throw RetryAttempt{"ref " + target.ref->name() + ": value trimmed while reading"};
}

void Transaction::report_history_miss(RefCore& ref) {
  ref.count_history_miss();
  // Writers in other processes learn of the miss from the head's child version, which they
  // read with the head anyway: a child created and removed in one multi adds 2 to it and
  // leaves nothing behind. Not awaited: the attempt retries either way, and a lost report
  // only makes the history grow later.
  const std::string probe = ref.head_path() + "/history-miss-" + runtime_.new_point().id;
  try {
    (void)runtime_.session().multi_async({op::Create{probe, {}, CreateMode::persistent},
                                      op::Remove{probe, 0}});
  } catch (const Error&) {
  }
}

const Bytes& Transaction::read(RefCore& ref) {
  Entry& target = entry(ref);
  if (!target.value) target.value = value_at_read_point(target, false);
  return *target.value;
}

void Transaction::require_unchanged_since_read_point(const Entry& target) {
  // Rule 3: a written or ensured ref must not have changed after the snapshot.
  if (target.head_stat.mzxid > read_point_) {
    throw RetryAttempt{"ref " + target.ref->name() + " changed after the read point"};
  }
}

void Transaction::write(RefCore& ref, Bytes value) {
  Entry& target = entry(ref);
  claims_.push_back(target.ref);
  require_unchanged_since_read_point(target);
  require_fits(value.size(), ref.max_value_size(), "ref " + ref.name());
  target.value = std::move(value);
  target.written = true;
}

const Bytes& Transaction::ensure(RefCore& ref) {
  Entry& target = entry(ref);
  claims_.push_back(target.ref);
  require_unchanged_since_read_point(target);
  target.ensured = true;
  // Commutes made before ensure are now checked at the read version like a write.
  if (!target.commutes.empty()) target.written = true;
  return read(ref);
}

Bytes Transaction::commute(RefCore& ref, std::function<Bytes(const Bytes&)> function) {
  leave_speculation();
  Entry& target = entry(ref);
  if (!target.value) target.value = value_at_read_point(target, true);
  target.value = function(*target.value);
  // On a written or ensured ref, a commute is an alter: its version is checked anyway.
  if (target.written || target.ensured) target.written = true;
  else target.commutes.push_back(std::move(function));
  return *target.value;
}

std::vector<std::shared_ptr<RefCore>> Transaction::touched() const {
  std::vector<std::shared_ptr<RefCore>> refs;
  for (const auto& [key, target] : entries_) refs.push_back(target.ref);
  return refs;
}

void Transaction::claim_refs() {
  std::vector<std::shared_ptr<RefCore>> refs;
  for (const auto& ref : claims_) {
    if (std::find(refs.begin(), refs.end(), ref) == refs.end()) refs.push_back(ref);
  }
  claim(stm_, barge_, refs);
}

void OpenTransaction::add_to_commit(std::vector<Operation> operations,
                                    std::function<void(const std::vector<OperationResult>&)> on_commit,
                                    std::function<void()> on_failure) {
  additions_.push_back(Addition{std::move(operations), std::move(on_commit), std::move(on_failure)});
}

// What the stages of one commit share.
struct Transaction::Commit {
  // A written or commuted value under a fresh point for the commit.
  struct Staged {
    Entry* target;
    Point point;
    HeadRecord next;
    std::vector<Point> trimmed;             // erased in the background once landed
    std::vector<std::string> trimmed_nodes;  // ZooKeeper-held: removed by the multi itself
    std::optional<op::Create> in_multi;  // rule 11: created by the commit multi itself
    std::optional<Bytes> unstored;       // the value, until store() wrote it to its store
  };

  std::vector<Entry*> fixed;     // written or ensured: checked at the version read
  std::vector<Entry*> commuted;  // commuted only: recomputed from the newest value
  // Rule 10: every ref this commit changes respects an older transaction's claim, commuted
  // ones too (else a stream of commutes starves a claimant that writes the ref).
  std::vector<std::shared_ptr<RefCore>> claimable;
  std::vector<NodeCache::Lookup> tag_lookups;  // of the claimable refs' tags, begun with their heads
  std::vector<BargeTag> tags;          // the claimable refs' tags, finished once values are stored
  std::size_t multi_bytes = 0;         // the multi's serialized size so far (rule 11)
  std::vector<Staged> written;         // values of written refs, stored once per commit
  std::vector<Staged> recomputed;      // values of commuted refs, stored again each round
  std::vector<NodeStat> commuted_stats;  // the commuted heads this round recomputed from
  MultiResult result;                  // the multi's reply
  // Rule 16: markers of this thread's earlier commits, removed by this commit's multi.
  std::vector<std::string> carried;
  // Rule 16: trimmed value nodes and carried markers the multi found gone already, left out
  // of later rounds.
  std::set<std::string> gone;

  // Stores `value` under a fresh point for `target`, whose head is `head` at `head_stat`.
  Staged stage(StmContext& stm, Entry* target, const HeadRecord& head, const NodeStat& head_stat,
               const Bytes& value) {
    RefCore& ref = *target->ref;
    ref.validate(value);
    Staged staged{target, stm.runtime().new_point(), HeadRecord{}, {}, {}, std::nullopt, std::nullopt};
    // Adaptive history (Clojure's min/max history): misses grow what is kept, those of
    // every process (reported in the head's child version) and this process's own.
    const auto& options = stm.runtime().options();
    const std::size_t misses = std::max<std::size_t>(
        ref.history_misses(), static_cast<std::size_t>(std::max(head_stat.cversion, 0)) / 2);
    staged.next.keep = static_cast<std::uint32_t>(std::min<std::size_t>(
        options.max_history, std::max<std::size_t>(head.keep, options.min_history + misses)));
    staged.next.newest = staged.point;
    staged.next.history.push_back(HeadEntry{head_stat.mzxid, head.newest});
    for (const auto& older : head.history) staged.next.history.push_back(older);
    const std::size_t chroot = stm.runtime().session().options().chroot.size();
    while (staged.next.history.size() > staged.next.keep) {
      // A value ZooKeeper holds goes with the commit that trims it (rule 16): it leaves the
      // history exactly when the multi lands, as a trimmed value must (rule 9).
      const Point old = staged.next.history.back().point;
      staged.next.history.pop_back();
      const auto node = commit_operation(ref.data(), {}, old);
      const std::size_t size = node ? op_overhead + chroot + node->path.size() : 0;
      if (node && multi_bytes + size <= multi_limit) {
        multi_bytes += size;
        staged.trimmed_nodes.push_back(node->path);
      } else {
        staged.trimmed.push_back(old);
      }
    }
    if (multi_bytes + value.size() <= multi_limit) {
      staged.in_multi = commit_operation(ref.data(), value, staged.point);
      if (staged.in_multi) {
        const std::size_t size = serialized_size(*staged.in_multi, chroot);
        if (multi_bytes + size <= multi_limit) multi_bytes += size;
        else staged.in_multi.reset();
      }
    }
    if (staged.in_multi) stm.runtime().remember(staged.point, value);
    else staged.unstored = value;
    return staged;
  }

  // Rule 16: writes the staged values the multi does not create, one batch per store, the
  // stores concurrently; durable and acknowledged on return (rule 7).
  static void store(StmContext& stm, std::vector<Staged>& staged) {
    std::vector<StoreWrites> batches;
    for (auto& s : staged) {
      if (!s.unstored) continue;
      batch_for(batches, &s.target->ref->store())
          .values.push_back(PointValue{&s.target->ref->data(), s.point, *s.unstored});
    }
    stm.batches().write(batches);
    for (auto& s : staged) {
      if (s.unstored) stm.runtime().remember(s.point, *std::exchange(s.unstored, std::nullopt));
    }
  }

  // Erases values stored for an attempt that did not commit, off this thread like trimmed
  // ones: no head names them, so none is ever read, and a store that stopped answering does
  // not hold the caller past its deadline a second time.
  static void discard(StmContext& stm, std::vector<Staged>& staged) {
    BackgroundErasure::Job unreferenced;
    for (auto& s : staged) {
      if (!s.in_multi) unreferenced.emplace_back(s.target->ref, s.point);
    }
    if (!unreferenced.empty()) stm.erasures().post(std::move(unreferenced));
    staged.clear();
  }
};

// One round's commit multi and where its parts start.
struct Transaction::Multi {
  std::vector<Operation> operations;
  std::size_t first_commuted = 0;   // the commuted heads
  std::size_t first_addition = 0;   // agent sends, lock guards
  std::size_t after_additions = 0;  // the values created in the multi, then the clock
  std::size_t first_cleanup = 0;    // after the clock: trimmed ZooKeeper-held values, old markers
  std::vector<std::size_t> heads_set;  // where the multi sets a written or commuted head
  std::vector<std::shared_ptr<RefCore>> released;  // refs whose claim the commit ends
};

// Rule 4 retries only the multi of a commute conflict, which a multi expecting the clock at
// one version cannot do once it moved; and what commute returns must be as current as a read
// point would make it. So a speculative attempt's first commute takes rule 2's read point,
// asking again in the same round trip for the heads the body read so far: they hold at the
// new read point when none changed, and the attempt goes on the usual way. Otherwise the body
// runs again the usual way.
void Transaction::leave_speculation() {
  if (!speculative_) return;
  std::vector<std::pair<Entry*, NodeCache::Lookup>> again;
  for (auto& [key, target] : entries_) again.emplace_back(&target, runtime_.nodes().begin(target.ref->head_path()));
  request_read_point();
  speculative_ = false;
  await_read_point();
  for (auto& [target, lookup] : again) {
    const NodeData node = runtime_.nodes().finish(lookup, read_point_);
    if (node.stat.mzxid != target->head_stat.mzxid) throw outdated(*target->ref);
    target->head_read = std::move(lookup);
  }
  check_session();
}

void Transaction::run(const std::function<void()>& body) {
  try {
    body();
    commit();
  } catch (const RetryAttempt&) {
    throw;
  } catch (...) {
    // What a speculative attempt throws may rest on reads that were not current.
    confirm_speculative_reads();
    throw;
  }
}

void Transaction::confirm_speculative_reads() {
  if (!speculative_) return;
  const std::int64_t speculated = read_point_;
  speculative_ = false;  // once: a retry it causes starts a new attempt anyway
  try {
    request_read_point();
    await_read_point();
    // The clock's last commit is still this client's: nothing the body read has changed.
    if (read_point_ == speculated) {
      stm_.speculation().landed();
      return;
    }
  } catch (const Error&) {
    // Unconfirmed: the usual attempt that follows meets the same trouble, and reports it.
  }
  throw RetryAttempt{"a speculative attempt's reads were not current", true};
}

void Transaction::commit() {
  Commit commit;
  if (!plan_commit(commit)) {
    // Rule 2 for a read-only attempt: its reads are as of a sync and the clock.
    confirm_speculative_reads();
    return;
  }
  give_up_if_doomed(commit);
  stage_written(commit);
  try {
    give_up_if_doomed(commit);  // storing values and yielding to older claimants take time
  } catch (const RetryAttempt&) {
    Commit::discard(stm_, commit.written);
    throw;
  }
  marker_path_ = runtime_.layout().marker(runtime_.new_point().id);
  for (std::size_t round = 0; round < runtime_.options().retry_limit; ++round) {
    if (!stage_commuted(commit)) continue;
    if (apply_result(commit, build_multi(commit))) return;
  }
  Commit::discard(stm_, commit.written);
  throw RetryLimitExceeded("transaction: commuted refs kept conflicting");
}

// Sorts the entries into what the commit writes, checks and recomputes; false when the
// attempt only read (its snapshot was consistent and nothing needs to be written).
bool Transaction::plan_commit(Commit& commit) {
  for (auto& [key, target] : entries_) {
    if (target.written || target.ensured) commit.fixed.push_back(&target);
    else if (!target.commutes.empty()) commit.commuted.push_back(&target);
  }
  if (commit.fixed.empty() && commit.commuted.empty() && additions_.empty()) return false;
  check_session();
  runtime_.announce_session();  // gc must see our session alive while our points are pending
  for (auto* targets : {&commit.fixed, &commit.commuted}) {
    for (Entry* target : *targets) {
      commit.claimable.push_back(target->ref);
      commit.tag_lookups.push_back(std::move(target->tag));
    }
  }

  // Rule 11: everything but the values ZooKeeper would hold must fit, before anything is
  // written; those values then ride in the multi only while it still fits.
  const std::size_t chroot = runtime_.session().options().chroot.size();
  std::size_t& bytes = commit.multi_bytes;
  bytes = 2 * (op_overhead + chroot) + runtime_.layout().stm_clock().size() + runtime_.layout().markers().size() + 1 +
          point_size;
  for (Entry* target : commit.fixed) {
    bytes += 2 * (op_overhead + chroot) + target->ref->head_path().size() +
             runtime_.layout().tag(target->ref->name()).size();
    if (target->written) bytes += encode_head(target->head).size() + head_entry_size;
  }
  for (Entry* target : commit.commuted) {  // re-read at commit: its head may have grown to the most
    bytes += 2 * (op_overhead + chroot) + target->ref->head_path().size() +
             runtime_.layout().tag(target->ref->name()).size() +
             (runtime_.options().max_history + 1) * head_entry_size + 32;
  }
  for (const auto& addition : additions_) {
    for (const auto& operation : addition.operations) bytes += serialized_size(operation, chroot);
  }
  if (bytes > multi_limit) {
    throw ValueTooLarge("transaction over " +
                        std::to_string(commit.fixed.size() + commit.commuted.size()) +
                        " refs: its commit would take about " + std::to_string(bytes) +
                        " bytes, over the " + std::to_string(multi_limit) +
                        " ZooKeeper accepts in one request; nothing was written");
  }
  // Rule 16: the markers this thread's earlier commits left ride in this multi, counted in
  // its size like everything in it; the values ZooKeeper holds get what room is left.
  commit.carried = runtime_.markers().carry(bytes);
  return true;
}

// A head written or ensured at the version read is checked by the multi; once its watch has
// reported a change that check must fail, and the failed multi would still cost the server a
// logged transaction. The attempt retries without sending it (a speculative one the usual
// way at once: another client committed after this one).
void Transaction::give_up_if_doomed(const Commit& commit) const {
  for (const Entry* target : commit.fixed) {
    if (runtime_.nodes().changed_since(target->head_read)) {
      throw RetryAttempt{"ref " + target->ref->name() + " changed since it was read", speculative_};
    }
  }
}

// Values of written refs are final now: validated and stored under fresh points; then the
// barging tags, looked up with the heads, give way to an older claimant (RetryAttempt).
void Transaction::stage_written(Commit& commit) {
  try {
    for (Entry* target : commit.fixed) {
      if (target->written) {
        commit.written.push_back(
            commit.stage(stm_, target, target->head, target->head_stat, *target->value));
      }
    }
    Commit::store(stm_, commit.written);
    commit.tags = finish_tags(stm_, commit.claimable, commit.tag_lookups);
    yield_to_older(stm_, barge_, commit.claimable, commit.tags);
  } catch (...) {
    Commit::discard(stm_, commit.written);
    throw;
  }
}

// Rule 4: commuted refs start again from their newest value, under fresh points. False when
// a newest value was replaced and trimmed meanwhile: the round reads again.
bool Transaction::stage_commuted(Commit& commit) {
  commit.recomputed.clear();
  commit.commuted_stats.clear();
  auto& session = runtime_.session();
  try {
    std::vector<std::future<NodeData>> replies;
    for (Entry* target : commit.commuted) replies.push_back(session.get_async(target->ref->head_path()));
    std::vector<std::pair<NodeData, HeadRecord>> heads;
    std::vector<std::pair<RefCore*, Point>> newest;
    for (std::size_t i = 0; i < commit.commuted.size(); ++i) {
      NodeData node = session.wait(replies[i]);
      HeadRecord head = decode_head(node.data, commit.commuted[i]->ref->head_path());
      newest.emplace_back(commit.commuted[i]->ref.get(), head.newest);
      heads.emplace_back(std::move(node), std::move(head));
    }
    cache_values(newest);
    for (std::size_t i = 0; i < commit.commuted.size(); ++i) {
      Entry* target = commit.commuted[i];
      const auto& [node, head] = heads[i];
      auto base = runtime_.fetch_value(target->ref->data(), head.newest);
      if (!base) {
        Commit::discard(stm_, commit.recomputed);
        return false;
      }
      Bytes value = std::move(*base);
      for (auto& function : target->commutes) value = function(value);
      commit.recomputed.push_back(commit.stage(stm_, target, head, node.stat, value));
      commit.commuted_stats.push_back(node.stat);
    }
    Commit::store(stm_, commit.recomputed);
  } catch (...) {
    Commit::discard(stm_, commit.recomputed);
    Commit::discard(stm_, commit.written);
    throw;
  }
  return true;
}

// Rule 5: marker, written/ensured heads, commuted heads, barging tags, additions, clock.
// Values created by the multi (rule 11) cannot fail (fresh points) and go right before the
// clock; clean-up (rule 16) goes last.
Transaction::Multi Transaction::build_multi(Commit& commit) {
  Multi multi;
  auto& operations = multi.operations;
  operations.push_back(op::Create{marker_path_, {}, CreateMode::persistent});
  std::size_t next_written = 0;
  for (Entry* target : commit.fixed) {
    if (target->written) {
      multi.heads_set.push_back(operations.size());
      operations.push_back(op::SetData{target->ref->head_path(),
                                       encode_head(commit.written[next_written++].next),
                                       target->head_stat.version});
    } else {
      operations.push_back(op::Check{target->ref->head_path(), target->head_stat.version});
    }
  }
  multi.first_commuted = operations.size();
  for (std::size_t i = 0; i < commit.recomputed.size(); ++i) {
    multi.heads_set.push_back(operations.size());
    operations.push_back(op::SetData{commit.recomputed[i].target->ref->head_path(),
                                     encode_head(commit.recomputed[i].next),
                                     commit.commuted_stats[i].version});
  }
  for (auto& tag : tag_operations(stm_, barge_, commit.claimable, commit.tags, multi.released)) {
    operations.push_back(std::move(tag));
  }
  multi.first_addition = operations.size();
  for (const auto& addition : additions_) {
    operations.insert(operations.end(), addition.operations.begin(), addition.operations.end());
  }
  multi.after_additions = operations.size();
  for (auto* staged : {&commit.written, &commit.recomputed}) {
    for (auto& s : *staged) {
      if (s.in_multi) operations.push_back(*s.in_multi);
    }
  }
  operations.push_back(op::SetData{runtime_.layout().stm_clock(), {}, speculative_ ? clock_version_ : -1});
  // Rule 16: trimmed ZooKeeper-held values and this thread's earlier markers go with the
  // commit. Value nodes and markers are created once and never changed: version 0 is theirs.
  multi.first_cleanup = operations.size();
  for (auto* staged : {&commit.written, &commit.recomputed}) {
    for (auto& s : *staged) {
      for (const auto& node : s.trimmed_nodes) {
        if (!commit.gone.contains(node)) operations.push_back(op::Remove{node, 0});
      }
    }
  }
  for (const auto& marker : commit.carried) {
    if (!commit.gone.contains(marker)) operations.push_back(op::Remove{marker, 0});
  }
  return multi;
}

// Sends the multi and acts on its outcome: true when it landed; false when only commuted
// heads conflicted (the next round recomputes them); RetryAttempt on any other conflict,
// OutcomeUnknown when ZooKeeper stayed unreachable.
bool Transaction::apply_result(Commit& commit, const Multi& multi) {
  // Rule 2: values were stored under this session's points; if it was renewed meanwhile,
  // gc may already see their writer dead and erase them, so the attempt starts again.
  try {
    check_session();
  } catch (const RetryAttempt&) {
    Commit::discard(stm_, commit.recomputed);
    Commit::discard(stm_, commit.written);
    throw;
  }
  MultiResult& result = commit.result;
  // Once sent, its multi is what checks a speculative attempt: nothing confirms it after.
  const bool speculated = std::exchange(speculative_, false);
  const Resolution resolution{marker_path_, runtime_.options().marker_grace,
                              [&] { return heads_name_points(commit); }, generation_};
  std::optional<bool> landed;
  try {
    landed = commit_with_cleanup(runtime_.session(), multi.operations, multi.first_cleanup, resolution,
                                 result, [&](const std::string& path) {
                                   commit.gone.insert(path);
                                   runtime_.markers().carried_gone(commit.carried, path);
                                 });
  } catch (const SessionExpired&) {
    // Rule 2: renewed before a send (the first, or a resend without a gone clean-up node),
    // which therefore did not go out.
    Commit::discard(stm_, commit.recomputed);
    Commit::discard(stm_, commit.written);
    throw RetryAttempt{"the ZooKeeper session was renewed before the commit was sent"};
  }
  if (!landed) {
    // Unknown: the points may be referenced, so they stay; gc judges them later.
    throw OutcomeUnknown("transaction commit: outcome unknown (ZooKeeper unreachable); "
                         "marker " + marker_path_);
  }
  if (*landed) {
    if (speculated) stm_.speculation().landed();
    after_landing(commit, multi);
    return true;
  }
  Commit::discard(stm_, commit.recomputed);
  if (result.failed_index >= multi.first_addition && result.failed_index < multi.after_additions) {
    std::size_t at = multi.first_addition;
    for (const auto& addition : additions_) {
      at += addition.operations.size();
      if (result.failed_index < at) {
        if (addition.on_failure) {
          Commit::discard(stm_, commit.written);
          addition.on_failure();
        }
        break;
      }
    }
  }
  if (speculated) {
    // Whatever failed first, another commit came after the one this attempt read as of.
    Commit::discard(stm_, commit.written);
    throw RetryAttempt{"a speculative commit found another commit first", true};
  }
  const bool only_commutes_conflicted = result.failed_index >= multi.first_commuted &&
                                        result.failed_index < multi.first_commuted + commit.commuted.size();
  if (!only_commutes_conflicted) {
    Commit::discard(stm_, commit.written);
    throw RetryAttempt{"commit conflict at operation " + std::to_string(result.failed_index)};
  }
  stm_.count_retry();
  return false;
}

// Whether a head this commit sets names the point it gave it (rule 6: then its multi landed,
// the points being fresh), read after the resolution's sync. A head that moved on and
// trimmed it no longer tells.
bool Transaction::heads_name_points(const Commit& commit) {
  auto& session = runtime_.session();
  std::vector<std::pair<const Commit::Staged*, std::future<NodeData>>> heads;
  for (const auto* staged : {&commit.written, &commit.recomputed}) {
    for (const auto& s : *staged) heads.emplace_back(&s, session.get_async(s.target->ref->head_path()));
  }
  bool named = false;
  for (auto& [staged, reply] : heads) {
    const NodeData node = session.wait(reply);
    named = named || names(decode_head(node.data, staged->target->ref->head_path()), staged->point);
  }
  return named;
}

// The heads this commit set are known from the multi itself (what it sent, the stat it got
// back): kept unwatched for the next transaction instead of read again (rule 12). After a
// lost reply resolved by the marker there is no stat: they are read ahead instead (a slot
// still holding an older unwatched head is not read, nor trusted: the run of this client's
// commits did not reach this one).
void Transaction::keep_written_heads(const Commit& commit, const Multi& multi) {
  const auto& results = commit.result.results;
  const std::size_t clock = multi.first_cleanup - 1;
  if (results.size() <= clock) {
    for (const std::size_t at : multi.heads_set) {
      runtime_.nodes().refresh(std::get<op::SetData>(multi.operations[at]).path);
    }
    return;
  }
  std::vector<std::pair<std::string, NodeData>> kept;
  for (const std::size_t at : multi.heads_set) {
    const auto& set = std::get<op::SetData>(multi.operations[at]);
    kept.emplace_back(set.path, NodeData{set.data, results[at].stat});
  }
  runtime_.nodes().keep_unwatched(std::move(kept), results[clock].stat.mzxid, results[clock].stat.version);
}

void Transaction::after_landing(Commit& commit, const Multi& multi) {
  // Rule 15: the commit has landed. Nothing from here on may run the body again or report
  // the transaction as not committed: every step runs, and a failure is named as such.
  stm_.count_commit();
  // Rule 16: the carried markers went with the multi; this one has answered all it had to
  // and goes with this thread's next commit (or at close, or by gc).
  runtime_.markers().commit_landed(commit.carried, marker_path_);
  std::string failure;
  auto step = [&](const char* what, const auto& work) {
    try {
      work();
    } catch (const std::exception& error) {
      if (failure.empty()) failure = std::string(what) + " failed: " + error.what();
    } catch (...) {
      if (failure.empty()) failure = std::string(what) + " failed";
    }
  };
  const std::string marker = marker_path_;
  step("cleaning up after the commit", [&] {
    // Rule 9: trimmed values go only now that the commit is known to have landed; rule 16:
    // off this thread, so the caller does not wait for them.
    BackgroundErasure::Job trimmed;
    for (auto* staged : {&commit.written, &commit.recomputed}) {
      for (auto& s : *staged) {
        for (auto& old : s.trimmed) trimmed.emplace_back(s.target->ref, old);
      }
    }
    stm_.erasures().post(std::move(trimmed));
    forget_claims(barge_, multi.released);
    keep_written_heads(commit, multi);
    // Released tags just changed: read them ahead for the next transaction.
    for (const auto& ref : multi.released) runtime_.nodes().refresh(runtime_.layout().tag(ref->name()));
  });
  const MultiResult& result = commit.result;
  std::size_t at = multi.first_addition;
  for (const auto& addition : additions_) {
    const auto count = addition.operations.size();
    std::vector<OperationResult> results;
    if (result.results.size() >= at + count) {
      results.assign(result.results.begin() + static_cast<std::ptrdiff_t>(at),
                     result.results.begin() + static_cast<std::ptrdiff_t>(at + count));
    }
    at += count;
    if (addition.on_commit) step("a commit callback", [&] { addition.on_commit(results); });
  }
  if (!failure.empty()) {
    throw CommittedWithError("transaction committed (marker " + marker + "), but " + failure);
  }
}

}  // namespace avout::detail
