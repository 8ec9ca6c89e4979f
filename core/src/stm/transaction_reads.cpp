// What a transaction reads and writes (docs/transactions.md rules 3, 8): values as of the
// read point, read together per store; writes, ensures and commutes kept until commit.
#include "stm/transaction_stages.hpp"

#include "stm/value_batches.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <utility>

namespace avout::detail {

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
    if (std::none_of(reads.begin(), reads.end(),
                     [&](const PointRead& r) { return r.point == point; })) {
      reads.push_back(PointRead{&one.first->data(), point});
    }
  }
  if (batches.empty() || (batches.size() == 1 && batches.front().reads.size() == 1))
    return;  // read() asks alone
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
      throw RetryAttempt{"ref " + target.ref->name() + ": no version old enough in its history",
                         RetryCause::history_miss};
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
  if (newest_on_miss) {
    // A commute only needs some recent value now (commit recomputes from the newest), so a
    // trimmed one is replaced by the newest instead of costing a retry of the whole body.
    for (int reread = 0; reread < 100; ++reread) {
      if (auto value = runtime_.fetch_value(target.ref->data(), now.newest))
        return std::move(*value);
      now = decode_head(runtime_.session().get(target.ref->head_path()).data,
                        target.ref->head_path());
    }
  }
  // A validated attempt's head was stale (it reads no history): no older snapshot missed.
  if (validated()) throw outdated(*target.ref);
  report_history_miss(*target.ref);
  throw RetryAttempt{"ref " + target.ref->name() + ": value trimmed while reading",
                     RetryCause::history_miss};
}

void Transaction::report_history_miss(RefCore& ref) {
  ref.count_history_miss();
  // Writers in other processes learn of the miss from the head's child version, which they
  // read with the head anyway: a child created and removed in one multi adds 2 to it and
  // leaves nothing behind. Not awaited: the attempt retries either way, and a lost report
  // only makes the history grow later.
  const std::string probe = ref.head_path() + "/history-miss-" + runtime_.new_point().id;
  try {
    (void)runtime_.session().multi_async(
        {op::Create{probe, {}, CreateMode::persistent}, op::Remove{probe, 0}});
  } catch (const Error&) {
  }
}

const Bytes& Transaction::read(RefCore& ref) {
  Entry& target = entry(ref);
  if (!target.value) target.value = value_at_read_point(target, false);
  target.read = true;
  require_consistent_view();  // V3: before the value reaches the body
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
  // On a written or ensured ref, a commute is an alter: its version is checked anyway. So it is
  // on a ref the body read in a serializable attempt: what it read is checked (V4).
  if (target.written || target.ensured || (target.read && kind_ != AttemptKind::snapshot)) {
    if (!target.written && !target.ensured) require_unchanged_since_read_point(target);
    target.written = true;
  }
  else
    target.commutes.push_back(std::move(function));
  require_consistent_view();  // V3: before the value reaches the body
  return *target.value;
}

}  // namespace avout::detail
