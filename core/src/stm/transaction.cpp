// One attempt of a transaction (docs/transactions.md rules 2, 12): the transaction running
// on this thread, its read point, its heads read together, and speculation (a first attempt
// over this client's last commit). Reads: transaction_reads.cpp; the commit:
// transaction_staging.cpp and transaction_multi.cpp.
#include "stm/transaction_stages.hpp"

#include "runtime/node_cache.hpp"
#include "stm/barging.hpp"
#include "stm/speculation_gate.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <utility>

namespace avout::detail {

namespace {
thread_local Transaction* running = nullptr;
}  // namespace

RetryAttempt outdated(const RefCore& ref) {
  return RetryAttempt{"ref " + ref.name() + " changed after this client's last commit", true};
}

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
  const auto own =
      speculate && prefetch.empty() ? runtime_.nodes().last_own_commit() : std::nullopt;
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
    throw RetryAttempt{"the ZooKeeper session was renewed during the attempt", false,
                       RetryCause::session_renewed};
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

// Rule 4 retries only the multi of a commute conflict, which a multi expecting the clock at
// one version cannot do once it moved; and what commute returns must be as current as a read
// point would make it. So a speculative attempt's first commute takes rule 2's read point,
// asking again in the same round trip for the heads the body read so far: they hold at the
// new read point when none changed, and the attempt goes on the usual way. Otherwise the body
// runs again the usual way.
void Transaction::leave_speculation() {
  if (!speculative_) return;
  std::vector<std::pair<Entry*, NodeCache::Lookup>> again;
  for (auto& [key, target] : entries_)
    again.emplace_back(&target, runtime_.nodes().begin(target.ref->head_path()));
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
