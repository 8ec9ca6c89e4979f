// Planning and staging a commit (docs/transactions.md rules 3, 4, 7, 10, 11): which refs it
// writes, checks and recomputes, their values stored under fresh points, older claimants
// yielded to. The multi itself: transaction_multi.cpp.
#include "stm/transaction_stages.hpp"

#include "runtime/pending_markers.hpp"
#include "runtime/zookeeper_held_values.hpp"
#include "stm/background_erasure.hpp"
#include "stm/history.hpp"
#include "stm/value_batches.hpp"
#include "zk/multi_size.hpp"

#include <avout/errors.hpp>

#include <future>
#include <utility>

namespace avout::detail {

Transaction::Commit::Staged Transaction::Commit::stage(StmContext& stm, Entry* target,
                                                       const HeadRecord& head,
                                                       const NodeStat& head_stat,
                                                       const Bytes& value) {
  RefCore& ref = *target->ref;
  ref.validate(value);
  Staged staged{target,      stm.runtime().new_point(), HeadRecord{}, {}, {}, std::nullopt,
                std::nullopt};
  // Adaptive history (Clojure's min/max history): misses grow what is kept, those of every
  // process (reported in the head's child version) and this process's own.
  const auto& options = stm.runtime().options();
  const std::uint32_t keep = history_to_keep(head.keep, ref.history_misses(), head_stat.cversion,
                                             options.min_history, options.max_history);
  std::vector<Point> trimmed;
  staged.next = next_head(head, head_stat.mzxid, staged.point, keep, trimmed);
  const std::size_t chroot = stm.runtime().session().options().chroot.size();
  place_trimmed(ref, trimmed, staged, chroot);
  place_value(ref, value, staged, chroot);
  if (staged.in_multi)
    stm.runtime().remember(staged.point, value);
  else
    staged.unstored = value;
  return staged;
}

void Transaction::Commit::place_trimmed(RefCore& ref, const std::vector<Point>& trimmed,
                                        Staged& staged, std::size_t chroot) {
  for (const Point& old : trimmed) {
    // A value ZooKeeper holds goes with the commit that trims it (rule 16): it leaves the
    // history exactly when the multi lands, as a trimmed value must (rule 9).
    const auto node = commit_operation(ref.data(), {}, old);
    const std::size_t size = node ? op_overhead + chroot + node->path.size() : 0;
    if (node && multi_bytes + size <= multi_limit) {
      multi_bytes += size;
      staged.trimmed_nodes.push_back(node->path);
    } else {
      staged.trimmed.push_back(old);
    }
  }
}

void Transaction::Commit::place_value(RefCore& ref, const Bytes& value, Staged& staged,
                                      std::size_t chroot) {
  if (multi_bytes + value.size() > multi_limit) return;
  staged.in_multi = commit_operation(ref.data(), value, staged.point);
  if (!staged.in_multi) return;
  const std::size_t size = serialized_size(*staged.in_multi, chroot);
  if (multi_bytes + size <= multi_limit)
    multi_bytes += size;
  else
    staged.in_multi.reset();
}

// Rule 16: writes the staged values the multi does not create, one batch per store, the
// stores concurrently; durable and acknowledged on return (rule 7).
void Transaction::Commit::store(StmContext& stm, std::vector<Staged>& staged) {
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
void Transaction::Commit::discard(StmContext& stm, std::vector<Staged>& staged) {
  BackgroundErasure::Job unreferenced;
  for (auto& s : staged) {
    if (!s.in_multi) unreferenced.emplace_back(s.target->ref, s.point);
  }
  if (!unreferenced.empty()) stm.erasures().post(std::move(unreferenced));
  staged.clear();
}

void Transaction::commit() {
  Commit commit;
  if (!plan_commit(commit)) {
    // Rule 2 for a read-only attempt: its reads are as of a sync and the clock (V5 for a
    // validated one).
    confirm_reads();
    return;
  }
  give_up_if_doomed(commit);
  require_consistent_view();  // V3: before values are staged
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
    switch (commit_role(target.written, target.ensured, !target.commutes.empty())) {
      case CommitRole::fixed: commit.fixed.push_back(&target); break;
      case CommitRole::commuted: commit.commuted.push_back(&target); break;
      case CommitRole::none:
        // V1/V4: serializable attempts check every head they read. A synced one read a head
        // newer than its read point from history: never checked at the head's version.
        if (kind_ == AttemptKind::snapshot) break;
        require_unchanged_since_read_point(target);
        commit.read_checks.push_back(&target);
        break;
    }
  }
  if (commit.fixed.empty() && commit.commuted.empty() && additions_.empty()) return false;
  wrote_ = true;
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
  std::size_t& bytes = commit.multi_bytes;
  bytes = estimate_multi_bytes(commit);
  if (bytes > multi_limit) {
    // V1: read checks that alone tip the multi over the limit name the way out.
    const std::string checks =
        commit.read_checks.empty()
            ? std::string()
            : " (" + std::to_string(commit.read_checks.size()) +
                  " of them only read and checked for serializability: Isolation::snapshot "
                  "checks only the refs written and ensured)";
    throw ValueTooLarge(
        "transaction over " +
        std::to_string(commit.fixed.size() + commit.commuted.size() + commit.read_checks.size()) +
        " refs" + checks + ": its commit would take about " + std::to_string(bytes) +
        " bytes, over the " + std::to_string(multi_limit) +
        " ZooKeeper accepts in one request; nothing was written");
  }
  // Rule 16: the markers this thread's earlier commits left ride in this multi, counted in
  // its size like everything in it; the values ZooKeeper holds get what room is left.
  commit.carried = runtime_.markers().carry(bytes);
  return true;
}

// Rule 11: the multi's size before any value ZooKeeper would hold rides in it: marker, clock,
// heads at their largest (a commuted head is read again at commit: it may have grown to the
// most), tags, and what agents and locks added.
std::size_t Transaction::estimate_multi_bytes(const Commit& commit) const {
  const std::size_t chroot = runtime_.session().options().chroot.size();
  std::size_t bytes = 2 * (op_overhead + chroot) + runtime_.layout().stm_clock().size() +
                      runtime_.layout().markers().size() + 1 + point_size;
  for (Entry* target : commit.fixed) {
    bytes += 2 * (op_overhead + chroot) + target->ref->head_path().size() +
             runtime_.layout().tag(target->ref->name()).size();
    if (target->written) bytes += encode_head(target->head).size() + head_entry_size;
  }
  for (Entry* target : commit.read_checks)
    bytes += op_overhead + chroot + target->ref->head_path().size();
  for (Entry* target : commit.commuted) {
    bytes += 2 * (op_overhead + chroot) + target->ref->head_path().size() +
             runtime_.layout().tag(target->ref->name()).size() +
             (runtime_.options().max_history + 1) * head_entry_size + 32;
  }
  for (const auto& addition : additions_) {
    for (const auto& operation : addition.operations) bytes += serialized_size(operation, chroot);
  }
  return bytes;
}

// A head written, ensured or (serializable) read is checked at the version read by the
// multi; once the node cache has reported it changed that check must fail, and the failed
// multi would still cost the server a logged transaction. The attempt retries without
// sending it, reading the changed heads ahead (V6).
void Transaction::give_up_if_doomed(const Commit& commit) {
  for (const auto* targets : {&commit.fixed, &commit.read_checks}) {
    for (const Entry* target : *targets) {
      if (runtime_.nodes().changed_since(target->head_read)) {
        prefetch_heads({target});
        throw RetryAttempt{"ref " + target->ref->name() + " changed since it was read"};
      }
    }
  }
}

// The barging tags, looked up with the heads, first give way to an older claimant
// (RetryAttempt): a yield stores nothing. Then values of written refs, final now, are
// validated and stored under fresh points.
void Transaction::stage_written(Commit& commit) {
  commit.tags = finish_tags(stm_, commit.claimable, commit.tag_lookups);
  yield_to_older(stm_, barge_, commit.claimable, commit.tags, commit.tag_lookups);
  try {
    for (Entry* target : commit.fixed) {
      if (target->written) {
        commit.written.push_back(
            commit.stage(stm_, target, target->head, target->head_stat, *target->value));
      }
    }
    Commit::store(stm_, commit.written);
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
    for (Entry* target : commit.commuted)
      replies.push_back(session.get_async(target->ref->head_path()));
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

}  // namespace avout::detail
