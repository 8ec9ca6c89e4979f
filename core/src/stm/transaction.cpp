// One attempt of a transaction (docs/transactions.md rules 2, 12, "Isolation"): the
// transaction running on this thread, its read point or validated reads, its heads read
// together, the consistency of its view (V3) and the confirmation of its outcome (V5). Reads: transaction_reads.cpp; the commit:
// transaction_staging.cpp and transaction_multi.cpp.
#include "stm/transaction_stages.hpp"

#include "runtime/node_cache.hpp"
#include "stm/barging.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <limits>
#include <utility>

namespace avout::detail {

namespace {
thread_local Transaction* running = nullptr;
}  // namespace

RetryAttempt outdated(const RefCore& ref) {
  return RetryAttempt{"ref " + ref.name() + " changed while the attempt read", RetryCause::conflict};
}

Transaction* Transaction::current() { return running; }

OpenTransaction* OpenTransaction::current() { return running; }

Transaction::Transaction(StmContext& stm, const std::vector<std::shared_ptr<RefCore>>& prefetch,
                         BargeState& barge, AttemptKind kind)
    : stm_(stm),
      runtime_(stm.runtime()),
      barge_(barge),
      outer_(running),
      generation_(runtime_.session().generation()),
      kind_(kind) {
  std::vector<Lookups> pending;
  pending.reserve(prefetch.size());
  for (const auto& ref : prefetch) pending.push_back(begin_lookups(*ref));
  if (validated()) {
    // V2: no sync, no clock. Its age comes with its first claim (barging.cpp dates it): until
    // then it yields to every live claimant.
    read_point_ = std::numeric_limits<std::int64_t>::max();
    read_point_known_ = true;
  } else {
    // Rule 2: sync, then the read point, then the heads, pipelined on one session.
    // Heads come from the node cache (rule 12): known ones cost nothing, the others are read
    // in the same pipeline; either way they are judged only once the read point is known. The
    // read point is awaited when first needed, so the body's first head read rides in the
    // same round trip as the sync and the clock.
    request_read_point();
  }
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
    if (!clock_stat)
      throw BackendError("stm clock " + runtime_.layout().stm_clock() + " is missing");
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
    throw RetryAttempt{"the ZooKeeper session was renewed during the attempt",
                       RetryCause::session_renewed};
  }
}

Transaction::Lookups Transaction::begin_lookups(const RefCore& ref) {
  return Lookups{runtime_.nodes().begin(ref.head_path()), begin_tag(stm_, ref)};
}

Transaction::Entry Transaction::finish_entry(std::shared_ptr<RefCore> ref, Lookups& lookups) {
  Entry fresh;
  fresh.ref = std::move(ref);
  const NodeData node = validated() ? runtime_.nodes().finish_newest(lookups.head)
                                    : runtime_.nodes().finish(lookups.head, read_point_);
  fresh.head_stat = node.stat;
  fresh.head = decode_head(node.data, fresh.ref->head_path());
  fresh.tag = std::move(lookups.tag);
  fresh.head_read = std::move(lookups.head);
  return fresh;
}

void Transaction::read_heads(const std::vector<RefCore*>& refs) {
  std::vector<std::pair<RefCore*, Lookups>> pending;
  for (RefCore* ref : refs) {
    const bool known =
        entries_.contains(ref) ||
        std::any_of(pending.begin(), pending.end(), [&](const auto& p) { return p.first == ref; });
    if (!known)
      pending.emplace_back(ref, begin_lookups(*ref));  // sent before awaiting the read point
  }
  if (pending.empty()) return;
  await_read_point();
  for (auto& [ref, lookups] : pending)
    entries_.emplace(ref, finish_entry(ref->shared_from_this(), lookups));
  check_session();
}

Transaction::Entry& Transaction::entry(RefCore& ref) {
  read_heads({&ref});
  return entries_.at(&ref);
}

void Transaction::run(const std::function<void()>& body) {
  try {
    body();
    commit();
  } catch (const RetryAttempt&) {
    throw;
  } catch (...) {
    // V5: what a validated attempt throws before its multi may rest on reads not current.
    confirm_reads();
    throw;
  }
}

// V3. Watched heads with no event since are the heads as of the newest reply read; kept heads
// are the heads up to the end of the run of our own commits they were kept in. So the reads
// are one view when none moved and none is newer than that run's end.
void Transaction::require_consistent_view() {
  if (!validated()) return;
  auto& nodes = runtime_.nodes();
  auto judge = [&] {
    std::vector<std::pair<const NodeCache::Lookup*, std::int64_t>> reads;
    reads.reserve(entries_.size());
    for (const auto& [key, target] : entries_) {
      // A ref only commuted is not part of the view (its value is recomputed at commit, rule
      // 4): a commute never runs the body again.
      if (commute_only(target)) continue;
      reads.emplace_back(&target.head_read, target.head_stat.mzxid);
    }
    return nodes.judge(reads);
  };
  auto view = judge();
  if (view == NodeCache::View::kept_stale) {
    // The kept heads again, watched, in one pipeline: unchanged, they are current now too.
    std::vector<std::pair<Entry*, NodeCache::Lookup>> again;
    for (auto& [key, target] : entries_) {
      if (target.head_read.kept() && !commute_only(target))
        again.emplace_back(&target, nodes.begin_watched(target.ref->head_path()));
    }
    for (auto& [target, lookup] : again) {
      const NodeData node = nodes.finish_newest(lookup);
      if (node.stat.mzxid != target->head_stat.mzxid) {
        prefetch_heads({target});
        throw RetryAttempt{"ref " + target->ref->name() + " changed after this client's commit",
                           RetryCause::view_changed};
      }
      target->head_read = std::move(lookup);
    }
    check_session();
    view = judge();
  }
  if (view != NodeCache::View::consistent) {
    std::vector<const Entry*> moved;
    for (const auto& [key, target] : entries_) {
      if (!commute_only(target) && nodes.changed_since(target.head_read)) moved.push_back(&target);
    }
    prefetch_heads(moved);
    throw RetryAttempt{"a ref the attempt read changed while it ran", RetryCause::view_changed};
  }
}

void Transaction::prefetch_heads(const std::vector<const Entry*>& entries) {
  // Watched: a head kept from our own commit is what a failed check found stale, unless a
  // sibling thread's commit has kept a newer one since (then that is the head to read).
  for (const Entry* target : entries)
    runtime_.nodes().prefetch(target->ref->head_path(), target->head_stat.mzxid);
}

// V5: a sync, the clock and the heads not known unchanged by their watch, in one pipeline.
void Transaction::confirm_reads() {
  if (!validated() || multi_sent_) return;
  kind_ = AttemptKind::synced;  // once: what it throws ends the attempt anyway
  auto& session = runtime_.session();
  bool current = true;
  try {
    request_read_point();
    std::vector<std::pair<const Entry*, std::future<NodeData>>> heads;
    for (const auto& [key, target] : entries_) {
      if (!target.head_read.watched)
        heads.emplace_back(&target, session.get_async(target.ref->head_path()));
    }
    await_read_point();
    for (auto& [target, reply] : heads)
      current = session.wait(reply).stat.mzxid == target->head_stat.mzxid && current;
    // Events come before the clock's reply: a watched head without one was current then.
    for (const auto& [key, target] : entries_) {
      if (target.head_read.watched && runtime_.nodes().changed_since(target.head_read))
        current = false;
    }
  } catch (const Error&) {
    // Unconfirmed: the synced attempt that follows meets the same trouble, and reports it.
    current = false;
  }
  if (!current) {
    throw RetryAttempt{"a validated attempt's reads were not current",
                       RetryCause::confirmation};
  }
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

void OpenTransaction::add_to_commit(
    std::vector<Operation> operations,
    std::function<void(const std::vector<OperationResult>&)> on_commit,
    std::function<void()> on_failure) {
  additions_.push_back(
      Addition{std::move(operations), std::move(on_commit), std::move(on_failure)});
}

}  // namespace avout::detail
