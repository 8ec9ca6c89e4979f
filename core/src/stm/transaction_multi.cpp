// One round's commit multi and its outcome (docs/transactions.md rules 5, 6, 9, 15, 16): laid
// out (commit_layout.hpp), sent with its marker, and acted on: landed, conflicted or unknown.
#include "stm/transaction_stages.hpp"

#include "runtime/marked_commit.hpp"
#include "runtime/pending_markers.hpp"
#include "stm/background_erasure.hpp"

#include <avout/errors.hpp>

#include <future>
#include <utility>
#include <variant>

namespace avout::detail {

// Rule 5: marker, written/ensured heads, commuted heads, barging tags, additions, clock.
// Values created by the multi (rule 11) cannot fail (fresh points) and go right before the
// clock; clean-up (rule 16) goes last: trimmed ZooKeeper-held values, this thread's earlier
// markers (commit_layout.hpp lays them out).
Transaction::Multi Transaction::build_multi(Commit& commit) {
  CommitPlan plan;
  plan.marker = marker_path_;
  std::size_t next_written = 0;
  // V9: every version here is one a head had when read. The session refuses a versioned op
  // past INT32_MAX or below -1, so no head can be read at -1 (a check at -1 would match any
  // version: rule 1); only the clock below is sent at -1.
  for (Entry* target : commit.fixed) {
    std::optional<Bytes> record;
    if (target->written) record = encode_head(commit.written[next_written++].next);
    plan.fixed.push_back({target->ref->head_path(), std::move(record), target->head_stat.version});
  }
  // V4: heads only read are checked at the version read, before the commuted heads (rule 4).
  for (Entry* target : commit.read_checks)
    plan.read_checks.push_back({target->ref->head_path(), std::nullopt, target->head_stat.version});
  for (std::size_t i = 0; i < commit.recomputed.size(); ++i) {
    plan.commuted.push_back({commit.recomputed[i].target->ref->head_path(),
                             encode_head(commit.recomputed[i].next),
                             commit.commuted_stats[i].version});
  }
  Multi multi;
  plan.tags = tag_operations(stm_, barge_, commit.claimable, commit.tags, multi.released);
  for (const auto& addition : additions_) plan.additions.push_back(addition.operations);
  for (auto* staged : {&commit.written, &commit.recomputed}) {
    for (auto& s : *staged) {
      if (s.in_multi) plan.values.push_back(*s.in_multi);
    }
  }
  plan.clock = runtime_.layout().stm_clock();
  for (auto* staged : {&commit.written, &commit.recomputed}) {
    for (auto& s : *staged)
      plan.cleanup.insert(plan.cleanup.end(), s.trimmed_nodes.begin(), s.trimmed_nodes.end());
  }
  plan.cleanup.insert(plan.cleanup.end(), commit.carried.begin(), commit.carried.end());
  plan.gone = commit.gone;
  static_cast<CommitMulti&>(multi) = lay_out_commit_multi(std::move(plan));
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
  SiblingClaim sibling(stm_.siblings());
  try {
    require_consistent_view();  // V3: before the multi is sent
    // V8: a sibling thread's multi in flight expecting one of our heads at the same version
    // is waited for; what it changed, if it landed, is then judged as any change.
    if (sibling.claim(expected_heads(commit), ReplyDeadline::current())) {
      require_consistent_view();
      give_up_if_doomed(commit);
    }
  } catch (...) {
    Commit::discard(stm_, commit.recomputed);
    Commit::discard(stm_, commit.written);
    throw;
  }
  // Once sent, the multi checks every read: nothing confirms the attempt after (V5).
  multi_sent_ = true;
  // V6 reads ahead a head a live attempt read when its watch fires; the multi's own writes
  // fire them, and a failed multi reads its checked heads ahead itself (after_conflict).
  for (auto& [key, target] : entries_) target.head_read.reading.reset();
  const std::optional<bool> landed = send_multi(commit, multi);
  if (!landed) {
    // Unknown: the points may be referenced, so they stay; gc judges them later.
    throw OutcomeUnknown(
        "transaction commit: outcome unknown (ZooKeeper unreachable); "
        "marker " +
        marker_path_);
  }
  if (*landed) {
    after_landing(commit, multi);
    return true;
  }
  return after_conflict(commit, multi);
}

// The heads this round's multi checks or sets, at the versions it expects (V8).
std::vector<SiblingMultis::Key> Transaction::expected_heads(const Commit& commit) const {
  std::vector<SiblingMultis::Key> keys;
  for (const auto* targets : {&commit.fixed, &commit.read_checks}) {
    for (const Entry* target : *targets)
      keys.emplace_back(target->ref->head_path(), target->head_stat.version);
  }
  for (std::size_t i = 0; i < commit.recomputed.size(); ++i) {
    keys.emplace_back(commit.recomputed[i].target->ref->head_path(),
                      commit.commuted_stats[i].version);
  }
  return keys;
}

// Sends the multi with its marker (rule 6): true when it landed, false when an operation
// failed (commit.result tells which), nullopt when the outcome stayed unknown. Clean-up
// nodes found gone are left out of this and later rounds.
std::optional<bool> Transaction::send_multi(Commit& commit, const Multi& multi) {
  const Resolution resolution{marker_path_, runtime_.options().marker_grace,
                              [&] { return heads_name_points(commit); }, generation_};
  try {
    return commit_with_cleanup(runtime_.session(), multi.operations, multi.first_cleanup,
                               resolution, commit.result, [&](const std::string& path) {
                                 commit.gone.insert(path);
                                 runtime_.markers().carried_gone(commit.carried, path);
                               });
  } catch (const SessionExpired&) {
    // Rule 2: renewed before a send (the first, or a resend without a gone clean-up node),
    // which therefore did not go out.
    Commit::discard(stm_, commit.recomputed);
    Commit::discard(stm_, commit.written);
    throw RetryAttempt{"the ZooKeeper session was renewed before the commit was sent",
                       RetryCause::session_renewed};
  }
}

// A multi that did not land: an addition's own failure is thrown (its on_failure), any
// other conflict retries the attempt; false when only commuted heads conflicted (the next
// round recomputes them).
bool Transaction::after_conflict(Commit& commit, const Multi& multi) {
  const MultiResult& result = commit.result;
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
  const bool only_commutes_conflicted =
      result.failed_index >= multi.first_commuted &&
      result.failed_index < multi.first_commuted + commit.commuted.size();
  if (!only_commutes_conflicted) {
    Commit::discard(stm_, commit.written);
    // V6: the retry finds the heads it will read again on their way.
    std::vector<const Entry*> checked(commit.fixed.begin(), commit.fixed.end());
    checked.insert(checked.end(), commit.read_checks.begin(), commit.read_checks.end());
    prefetch_heads(checked);
    throw RetryAttempt{"commit conflict at operation " + std::to_string(result.failed_index)};
  }
  stm_.count_retry(RetryCause::commute_conflict);
  runtime_.metrics().attempt();  // the next round recomputes the commutes and commits again
  return false;
}

// Whether a head this commit sets names the point it gave it (rule 6: then its multi landed,
// the points being fresh), read after the resolution's sync. A head that moved on and
// trimmed it no longer tells.
bool Transaction::heads_name_points(const Commit& commit) {
  auto& session = runtime_.session();
  std::vector<std::pair<const Commit::Staged*, std::future<NodeData>>> heads;
  for (const auto* staged : {&commit.written, &commit.recomputed}) {
    for (const auto& s : *staged)
      heads.emplace_back(&s, session.get_async(s.target->ref->head_path()));
  }
  bool named = false;
  for (auto& [staged, reply] : heads) {
    const NodeData node = session.wait(reply);
    // A ref removed since names nothing: whether the commit landed before it stays unknown.
    if (is_head_tombstone(node.data)) continue;
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
  runtime_.nodes().keep_unwatched(std::move(kept), results[clock].stat.mzxid,
                                  results[clock].stat.version);
}

// What a landed commit leaves to do: erase what it trimmed, end its claims, keep or read
// ahead the heads and tags it changed.
void Transaction::clean_up_after_landing(Commit& commit, const Multi& multi) {
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
  for (const auto& ref : multi.released)
    runtime_.nodes().refresh(runtime_.layout().tag(ref->name()));
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
  step("cleaning up after the commit", [&] { clean_up_after_landing(commit, multi); });
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
