#include "node_cache.hpp"
#include "zookeeper_held_values.hpp"

#include <avout/detail/stm.hpp>
#include <avout/errors.hpp>

#include <algorithm>
#include <chrono>
#include <thread>
#include <variant>

namespace avout::detail {

namespace {
thread_local Transaction* running = nullptr;

// Rule 11: ZooKeeper answers a request over jute.maxbuffer (1 MB by default) by dropping the
// connection, so the commit multi, counted as it is serialized, stays under it with a margin.
constexpr std::size_t multi_limit = 960 * 1024;
// What an op costs besides its path and data: op header, lengths, version, flags and ACL.
constexpr std::size_t op_overhead = 128;
// A point id: 16 hex digits of the session, '-', a 36-character UUID.
constexpr std::size_t point_size = 53;
// A history entry in an encoded head: zxid and length-prefixed point id.
constexpr std::size_t head_entry_size = 8 + 8 + point_size;

std::size_t serialized_size(const Operation& operation, std::size_t chroot) {
  return std::visit(
      [&](const auto& o) {
        std::size_t size = op_overhead + chroot + o.path.size();
        if constexpr (requires { o.data; }) size += o.data.size();
        return size;
      },
      operation);
}

// A younger transaction gives way to a live older one at most this often per dosync, so a
// tag left behind by a stuck (but living) process delays others only for a while.
constexpr std::size_t yield_limit = 100;

void erase_quietly(RefCore& ref, const Point& point) {
  try {
    ref.data().erase(point);
  } catch (const Error&) {
    // Left for gc: an unreferenced point is garbage, never visible.
  }
}
}  // namespace

Transaction* Transaction::current() { return running; }

std::optional<bool> resolve_commit(ZooKeeperSession& session, const std::string& marker) {
  const auto deadline = std::chrono::steady_clock::now() + session.options().session_timeout * 3;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      auto synced = session.sync_async(marker);
      auto found = session.exists_async(marker);
      const bool present = session.wait(found).has_value();
      session.wait(synced);
      return present;
    } catch (const ConnectionLoss&) {
    } catch (const SessionExpired&) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return std::nullopt;
}

std::optional<bool> commit_with_marker(ZooKeeperSession& session,
                                       const std::vector<Operation>& operations,
                                       const std::string& marker, MultiResult* result) {
  try {
    MultiResult reply = session.multi(operations);
    const bool committed = reply.committed;
    if (result != nullptr) *result = std::move(reply);
    return committed;
  } catch (const ConnectionLoss&) {
    return resolve_commit(session, marker);
  } catch (const SessionExpired&) {
    return resolve_commit(session, marker);
  }
}

Transaction::Transaction(StmContext& stm, const std::vector<std::shared_ptr<RefCore>>& prefetch,
                         BargeState& barge)
    : stm_(stm), barge_(barge), outer_(running), generation_(stm.session().generation()) {
  // Rule 2: sync, then the read point, then the heads, pipelined on one session.
  // Heads come from the node cache (rule 12): known ones cost nothing, the others are read
  // in the same pipeline; either way they are judged only once the read point is known.
  auto& session = stm_.session();
  std::vector<NodeCache::Lookup> heads;
  heads.reserve(prefetch.size());
  for (const auto& ref : prefetch) heads.push_back(stm_.nodes().begin(ref->head_path()));
  auto synced = session.sync_async(stm_.clock_path());
  auto clock = session.exists_async(stm_.clock_path());
  auto clock_stat = session.wait(clock);  // replies come in order: the sync's is in too
  session.wait(synced);
  if (!clock_stat) throw BackendError("stm clock " + stm_.clock_path() + " is missing");
  read_point_ = clock_stat->mzxid;
  for (std::size_t i = 0; i < prefetch.size(); ++i) {
    Entry& fresh = entries_[prefetch[i].get()];
    fresh.ref = prefetch[i];
    load_head(fresh, stm_.nodes().finish(heads[i]));
  }
  check_session();
  if (!barge_.age) barge_.age = stm_.new_age(read_point_);
  running = this;
}

Transaction::~Transaction() { running = outer_; }

void Transaction::check_session() const {
  if (stm_.session().generation() != generation_) {
    throw RetryAttempt{"the ZooKeeper session was renewed during the attempt"};
  }
}

void Transaction::load_head(Entry& target, NodeData node) {
  target.head_stat = node.stat;
  target.head = decode_head(node.data, target.ref->head_path());
}

Transaction::Entry& Transaction::entry(RefCore& ref) {
  auto found = entries_.find(&ref);
  if (found != entries_.end()) return found->second;
  Entry& fresh = entries_[&ref];
  fresh.ref = ref.shared_from_this();
  auto lookup = stm_.nodes().begin(ref.head_path());
  load_head(fresh, stm_.nodes().finish(lookup));
  check_session();
  return fresh;
}

Bytes Transaction::value_at_read_point(Entry& target, bool newest_on_miss) {
  const Point* point = nullptr;
  if (target.head_stat.mzxid <= read_point_) {
    point = &target.head.newest;
  } else {
    for (const auto& older : target.head.history) {
      if (older.zxid <= read_point_) {
        point = &older.point;
        break;
      }
    }
  }
  if (point == nullptr) {
    if (!newest_on_miss) {
      report_history_miss(*target.ref);
      throw RetryAttempt{"ref " + target.ref->name() + ": no version old enough in its history"};
    }
    point = &target.head.newest;
  }
  if (auto value = stm_.fetch(*target.ref, *point)) return std::move(*value);
  // Rule 8: a missing value is a history miss only when the head moved past it.
  // Synced: a follower's stale head could still name a value the leader's head has dropped.
  stm_.session().sync(target.ref->head_path());
  auto node = stm_.session().get(target.ref->head_path());
  auto now = decode_head(node.data, target.ref->head_path());
  bool referenced = now.newest == *point;
  for (const auto& older : now.history) referenced = referenced || older.point == *point;
  if (referenced) {
    throw BackendError("ref " + target.ref->name() + ": value at point " + point->id +
                       " is missing from its store while the head references it");
  }
  if (newest_on_miss) {
    // A commute only needs some recent value now (commit recomputes from the newest), so a
    // trimmed one is replaced by the newest instead of costing a retry of the whole body.
    for (int reread = 0; reread < 100; ++reread) {
      if (auto value = stm_.fetch(*target.ref, now.newest)) return std::move(*value);
      now = decode_head(stm_.session().get(target.ref->head_path()).data, target.ref->head_path());
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
  const std::string probe = ref.head_path() + "/history-miss-" + stm_.new_point().id;
  try {
    (void)stm_.session().multi_async({op::Create{probe, {}, CreateMode::persistent},
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

std::vector<Transaction::Tag> Transaction::read_tags(const std::vector<Entry*>& targets,
                                                    const std::function<void()>& meanwhile) {
  auto& session = stm_.session();
  std::vector<NodeCache::Lookup> replies;
  replies.reserve(targets.size());
  for (Entry* target : targets) {
    replies.push_back(stm_.nodes().begin(stm_.tag_path(target->ref->name())));
  }
  if (meanwhile) meanwhile();
  std::vector<Tag> tags;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const std::string path = stm_.tag_path(targets[i]->ref->name());
    NodeData node;
    try {
      node = stm_.nodes().finish(replies[i]);
    } catch (const NoNode&) {
      session.create_recursive(path);  // a ref made before tags existed
      node = session.get(path);
    }
    tags.push_back(Tag{decode_tag(node.data, path), node.stat.version});
  }
  return tags;
}

void Transaction::claim_refs() {
  std::vector<Entry*> targets;
  for (const auto& ref : claims_) {
    Entry* target = &entries_.at(ref.get());
    if (std::find(targets.begin(), targets.end(), target) == targets.end()) {
      targets.push_back(target);
    }
  }
  if (targets.empty()) return;
  auto& session = stm_.session();
  std::vector<Tag> tags = read_tags(targets);
  std::vector<std::size_t> taken;  // decided before any claim goes out, so none is left unawaited
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const auto& owner = tags[i].owner;
    // An older live transaction keeps its claim; anything else gives way to ours.
    if (!(owner && *owner < *barge_.age && stm_.alive(*owner))) taken.push_back(i);
  }
  std::vector<std::pair<std::shared_ptr<RefCore>, std::future<NodeStat>>> claims;
  for (std::size_t i : taken) {
    try {
      claims.emplace_back(targets[i]->ref,
                          session.set_async(stm_.tag_path(targets[i]->ref->name()),
                                            encode_tag(*barge_.age), tags[i].version));
    } catch (const Error&) {
      barge_.unsure.insert(targets[i]->ref);  // may have gone out: settled from the tag later
    }
  }
  for (auto& [ref, reply] : claims) {
    try {
      barge_.held[ref] = session.wait(reply).version;
      barge_.unsure.erase(ref);
    } catch (const BadVersion&) {
      // Another transaction claimed it in between: the next attempt reads who.
    } catch (const Error&) {
      // The claim may have been applied (a lost reply): resolved from the tag later.
      barge_.unsure.insert(ref);
    }
  }
}

void Transaction::add_to_commit(std::vector<Operation> operations,
                                std::function<void(const std::vector<OperationResult>&)> on_commit,
                                std::function<void()> on_failure) {
  additions_.push_back(CommitAddition{std::move(operations), std::move(on_commit),
                                      std::move(on_failure)});
}

void Transaction::commit() {
  std::vector<Entry*> fixed;     // written or ensured: checked at the version read
  std::vector<Entry*> commuted;  // commuted only: recomputed from the newest value
  for (auto& [key, target] : entries_) {
    if (target.written || target.ensured) fixed.push_back(&target);
    else if (!target.commutes.empty()) commuted.push_back(&target);
  }
  // Read-only: the snapshot was consistent and nothing needs to be written.
  if (fixed.empty() && commuted.empty() && additions_.empty()) return;
  auto& session = stm_.session();
  check_session();
  stm_.announce_session();  // gc must see our session alive while our points are pending

  std::vector<Tag> tags;

  // Values of written refs are final now: validate and store them under fresh points.
  // Rule 11: everything but the values ZooKeeper would hold must fit, before anything is
  // written; those values then ride in the multi only while it still fits.
  const std::size_t chroot = session.options().chroot.size();
  std::size_t multi_bytes = 2 * (op_overhead + chroot) + stm_.clock_path().size() +
                            stm_.markers_root().size() + 1 + point_size;
  for (Entry* target : fixed) {
    multi_bytes += 2 * (op_overhead + chroot) + target->ref->head_path().size() +
                   stm_.tag_path(target->ref->name()).size();
    if (target->written) multi_bytes += encode_head(target->head).size() + head_entry_size;
  }
  for (Entry* target : commuted) {  // re-read at commit: its head may have grown to the most
    multi_bytes += 2 * (op_overhead + chroot) + target->ref->head_path().size() +
                   stm_.tag_path(target->ref->name()).size() +
                   (stm_.options().max_history + 1) * head_entry_size + 32;
  }
  for (const auto& addition : additions_) {
    for (const auto& operation : addition.operations) multi_bytes += serialized_size(operation, chroot);
  }
  if (multi_bytes > multi_limit) {
    throw ValueTooLarge("transaction over " + std::to_string(fixed.size() + commuted.size()) +
                        " refs: its commit would take about " + std::to_string(multi_bytes) +
                        " bytes, over the " + std::to_string(multi_limit) +
                        " ZooKeeper accepts in one request; nothing was written");
  }
  auto stage = [&](Entry* target, const HeadRecord& head, const NodeStat& head_stat,
                   const Bytes& value) {
    RefCore& ref = *target->ref;
    ref.validate(value);
    Staged staged{target, stm_.new_point(), HeadRecord{}, {}, std::nullopt};
    // Adaptive history (Clojure's min/max history): misses grow what is kept, those of
    // every process (reported in the head's child version) and this process's own.
    const auto& options = stm_.options();
    const std::size_t misses = std::max<std::size_t>(
        ref.history_misses(), static_cast<std::size_t>(std::max(head_stat.cversion, 0)) / 2);
    staged.next.keep = static_cast<std::uint32_t>(std::min<std::size_t>(
        options.max_history, std::max<std::size_t>(head.keep, options.min_history + misses)));
    staged.next.newest = staged.point;
    staged.next.history.push_back(HeadEntry{head_stat.mzxid, head.newest});
    for (const auto& older : head.history) staged.next.history.push_back(older);
    while (staged.next.history.size() > staged.next.keep) {
      staged.trimmed.push_back(staged.next.history.back().point);
      staged.next.history.pop_back();
    }
    if (multi_bytes + value.size() <= multi_limit) {
      staged.in_multi = commit_operation(ref.data(), value, staged.point);
      if (staged.in_multi) {
        const std::size_t size = serialized_size(*staged.in_multi, chroot);
        if (multi_bytes + size <= multi_limit) multi_bytes += size;
        else staged.in_multi.reset();
      }
    }
    if (!staged.in_multi) ref.data().set(value, staged.point);
    stm_.remember(staged.point, value);
    return staged;
  };
  std::vector<Staged> written;
  auto discard = [&](std::vector<Staged>& staged) {
    for (auto& s : staged) {
      if (!s.in_multi) erase_quietly(*s.target->ref, s.point);
    }
    staged.clear();
  };
  // Rule 10: every ref this commit changes respects an older transaction's claim, commuted
  // ones too (else a stream of commutes starves a claimant that writes the ref).
  std::vector<Entry*> claimable = fixed;
  claimable.insert(claimable.end(), commuted.begin(), commuted.end());
  try {
    // The barging tags, read while values are stored.
    tags = read_tags(claimable, [&] {
      for (Entry* target : fixed) {
        if (target->written) {
          written.push_back(stage(target, target->head, target->head_stat, *target->value));
        }
      }
    });
    for (std::size_t i = 0; i < claimable.size(); ++i) {
      const auto& owner = tags[i].owner;
      if (owner && *owner < *barge_.age && barge_.yields < yield_limit && stm_.alive(*owner)) {
        ++barge_.yields;
        throw RetryAttempt{"ref " + claimable[i]->ref->name() + " is claimed by an older transaction"};
      }
    }
  } catch (...) {
    discard(written);
    throw;
  }

  marker_path_ = stm_.marker_path(stm_.new_point().id);
  const std::string& marker = marker_path_;
  for (std::size_t round = 0; round < stm_.options().retry_limit; ++round) {
    // Rule 4: commuted refs start again from their newest value, under fresh points.
    std::vector<Staged> recomputed;
    std::vector<NodeStat> commuted_stats;
    bool trimmed_meanwhile = false;  // a newest value was replaced and trimmed: read again
    try {
      std::vector<std::future<NodeData>> heads;
      for (Entry* target : commuted) heads.push_back(session.get_async(target->ref->head_path()));
      for (std::size_t i = 0; i < commuted.size(); ++i) {
        Entry* target = commuted[i];
        NodeData node = session.wait(heads[i]);
        HeadRecord head = decode_head(node.data, target->ref->head_path());
        auto base = stm_.fetch(*target->ref, head.newest);
        if (!base) {
          trimmed_meanwhile = true;
          break;
        }
        Bytes value = std::move(*base);
        for (auto& function : target->commutes) value = function(value);
        recomputed.push_back(stage(target, head, node.stat, value));
        commuted_stats.push_back(node.stat);
      }
    } catch (...) {
      discard(recomputed);
      discard(written);
      throw;
    }
    if (trimmed_meanwhile) {
      discard(recomputed);
      continue;
    }

    // Rule 5: marker, written/ensured heads, commuted heads, barging tags, clock. Values
    // created by the multi (rule 11) cannot fail (fresh points) and go last but the clock.
    std::vector<Operation> operations;
    operations.push_back(op::Create{marker, {}, CreateMode::persistent});
    std::size_t next_written = 0;
    for (Entry* target : fixed) {
      if (target->written) {
        operations.push_back(op::SetData{target->ref->head_path(),
                                         encode_head(written[next_written++].next),
                                         target->head_stat.version});
      } else {
        operations.push_back(op::Check{target->ref->head_path(), target->head_stat.version});
      }
    }
    const std::size_t first_commuted = operations.size();
    for (std::size_t i = 0; i < recomputed.size(); ++i) {
      operations.push_back(op::SetData{recomputed[i].target->ref->head_path(),
                                       encode_head(recomputed[i].next),
                                       commuted_stats[i].version});
    }
    std::vector<std::shared_ptr<RefCore>> released;
    for (std::size_t i = 0; i < claimable.size(); ++i) {
      const std::string path = stm_.tag_path(claimable[i]->ref->name());
      if (tags[i].owner && *tags[i].owner == *barge_.age) {
        operations.push_back(op::SetData{path, {}, tags[i].version});  // our claim ends here
        released.push_back(claimable[i]->ref);
      } else {
        operations.push_back(op::Check{path, tags[i].version});
      }
    }
    const std::size_t first_addition = operations.size();
    for (const auto& addition : additions_) {
      operations.insert(operations.end(), addition.operations.begin(), addition.operations.end());
    }
    const std::size_t after_additions = operations.size();
    for (auto* staged : {&written, &recomputed}) {
      for (auto& s : *staged) {
        if (s.in_multi) operations.push_back(*s.in_multi);
      }
    }
    operations.push_back(op::SetData{stm_.clock_path(), {}, -1});

    // Rule 2: values were stored under this session's points; if it was renewed meanwhile,
    // gc may already see their writer dead and erase them, so the attempt starts again.
    try {
      check_session();
    } catch (const RetryAttempt&) {
      discard(recomputed);
      discard(written);
      throw;
    }
    MultiResult result;
    const std::optional<bool> landed = commit_with_marker(session, operations, marker, &result);
    if (!landed) {
      // Unknown: the points may be referenced, so they stay; gc judges them later.
      throw OutcomeUnknown("transaction commit: outcome unknown (ZooKeeper unreachable); "
                           "marker " + marker);
    }
    if (*landed) {
      after_landing(written, recomputed, released, result, first_addition);
      return;
    }
    discard(recomputed);
    if (!result.committed && result.failed_index >= first_addition &&
        result.failed_index < after_additions) {
      std::size_t at = first_addition;
      for (const auto& addition : additions_) {
        at += addition.operations.size();
        if (result.failed_index < at) {
          if (addition.on_failure) {
            discard(written);
            addition.on_failure();
          }
          break;
        }
      }
    }
    const bool only_commutes_conflicted =
        !result.committed && result.failed_index >= first_commuted &&
        result.failed_index < first_commuted + commuted.size();
    if (!only_commutes_conflicted) {
      discard(written);
      throw RetryAttempt{"commit conflict at operation " + std::to_string(result.failed_index)};
    }
    stm_.count_retry();
  }
  discard(written);
  throw RetryLimitExceeded("transaction: commuted refs kept conflicting");
}

void Transaction::after_landing(std::vector<Staged>& written, std::vector<Staged>& recomputed,
                                const std::vector<std::shared_ptr<RefCore>>& released,
                                const MultiResult& result, std::size_t first_addition) {
  // Rule 15: the commit has landed. Nothing from here on may run the body again or report
  // the transaction as not committed: every step runs, and a failure is named as such.
  stm_.count_commit();
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
  auto& session = stm_.session();
  const std::string marker = marker_path_;
  step("cleaning up after the commit", [&] {
    // Rule 9: trimmed values go only now that the commit is known to have landed.
    for (auto* staged : {&written, &recomputed}) {
      for (auto& s : *staged) {
        for (auto& old : s.trimmed) erase_quietly(*s.target->ref, old);
      }
    }
    for (const auto& ref : released) {
      barge_.held.erase(ref);
      barge_.unsure.erase(ref);
    }
    (void)session.remove_async(marker, 0);
    // The heads (and released tags) just changed: read them ahead for the next transaction.
    for (auto* staged : {&written, &recomputed}) {
      for (auto& s : *staged) stm_.nodes().refresh(s.target->ref->head_path());
    }
    for (const auto& ref : released) stm_.nodes().refresh(stm_.tag_path(ref->name()));
  });
  std::size_t at = first_addition;
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
