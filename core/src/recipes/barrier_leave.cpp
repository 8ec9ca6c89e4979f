// BarrierCore::leave: record leaving, wait until every member did, tell a death from a leave.
#include "recipes/barrier_core.hpp"
#include "zk/outcome.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <chrono>

namespace avout::detail {

namespace {

bool listed(const std::vector<std::string>& children, const std::string& name) {
  return std::find(children.begin(), children.end(), name) != children.end();
}
}  // namespace

void BarrierCore::leave(const Deadline& deadline) {
  std::lock_guard lock(mutex_);
  if (!round_) throw Error("barrier " + name_ + ": leave without enter");
  const std::string what = "barrier " + name_ + ": leave";
  const std::string record = left_record(round_->number, mine());
  if (session_.ended_since(generation_)) {
    broken("this participant's session ended after it entered", record);
  }
  try {
    record_leaving(record, deadline);
  } catch (const Timeout&) {
    return give_up(record, what, deadline);
  }
  for (;;) {
    const auto seen = wake_->count();
    const auto snapshot = look(deadline);
    if (!snapshot) return give_up(record, what, deadline);
    if (round_over(*snapshot, record)) return;
    const auto view = judge_leave(*round_, snapshot->children);
    if (view.dead) {
      reopen(*snapshot, false);
      broken("member " + *view.dead + " ended before it left", record);
    }
    if (view.inside.empty()) {  // the last to record its leaving (or it died after): reopen
      reopen(*snapshot, true);
      continue;  // the next look sees the round over
    }
    // No watch on the records: the last to record sees every record and reopens, and that
    // change of the folder's record wakes everyone once. Member nodes are watched for deaths.
    if (!watch_members(deadline)) continue;
    if (!wake_->wait_past(seen, deadline, look_again_after)) {
      return give_up(record, what, deadline);
    }
  }
}

void BarrierCore::record_leaving(const std::string& record, const Deadline& deadline) {
  // Only while our node is there: once it went with our session, the others may have judged
  // us dead already, and a record now would contradict them.
  const std::string path = path_of(record);
  const std::vector<Operation> ops{op::Check{*node_, 0},
                                   op::Create{path, {}, CreateMode::persistent}};
  const std::string what = "barrier " + name_ + ": recording that " + mine() + " left";
  for (;;) {
    try {
      const ReplyDeadline replies(outcome_deadline(deadline));
      const auto result = session_.multi(ops, generation_);
      if (result.committed || result.failed_index == 1) return;  // 1: recorded before
      broken("this participant's session ended after it entered", record);
    } catch (const SessionExpired&) {
      if (recorded(path, grace(), what)) return;
      broken("this participant's session ended after it entered", record);
    } catch (const ConnectionLoss&) {
      if (recorded(path, deadline, what)) return;
    }
  }
}

bool BarrierCore::recorded(const std::string& path, const Deadline& deadline,
                           const std::string& what) {
  // Our record landed if it is there, or if the round completed since: the completing member
  // saw it, then deleted it with the others. A round that broke meanwhile keeps the records
  // it saw, so ours missing then means it never landed (and a retry makes it: leave then
  // learns the round broke). Only a member stalled past a whole later round could be misled:
  // the record then says nothing of its round, which is taken as completed.
  const auto look = [&] {
    if (session_.exists(path)) return true;
    const auto folder = session_.get(folder_);
    if (folder.stat.version == round_version_) return false;
    const auto now = decode_record(folder.data, folder_).round;
    return !(now.number == round_->number + 1 && now.previous_broke);
  };
  return outcome_of(session_, folder_, look, deadline, what) == Outcome::landed;
}

bool BarrierCore::round_over(const Snapshot& seen, const std::string& record) {
  if (seen.version == round_version_) return false;
  // It reopened: completed when the records went with it, broken when ours is still there.
  if (listed(seen.children, record)) broken("a member ended before it left", record);
  forget_round();
  return true;
}

bool BarrierCore::watch_members(const Deadline& deadline) {
  const auto wake_me = [wake = wake()](const WatchEvent&) { wake->bump(); };
  std::vector<std::future<std::optional<NodeStat>>> answers;
  for (const auto& name : round_->members) {
    answers.push_back(session_.exists_async(path_of(name), wake_me));
  }
  try {
    const ReplyDeadline replies(outcome_deadline(deadline));
    bool all_there = true;
    for (auto& reply : answers) all_there = session_.wait(reply).has_value() && all_there;
    return all_there;       // one gone: look again now
  } catch (const Error&) {  // a connection loss or the deadline: the wait below tells
    return true;
  }
}

void BarrierCore::reopen(const Snapshot& seen, bool completed) {
  // One multi, conditional on the record still being our closed round: the next round
  // opens; when it completed, the records go with it (when broken they stay, so a member
  // still leaving finds its own and learns the round broke).
  std::vector<Operation> ops{op::SetData{
      folder_, encode_record(BarrierRecord{n_, next_round(*round_, !completed)}), seen.version}};
  if (completed) {
    for (const auto& name : round_->members) {
      ops.emplace_back(op::Remove{path_of(left_record(round_->number, name)), 0});
    }
  }
  try {
    const ReplyDeadline replies(grace());
    (void)session_.multi(ops);  // not committed: another member reopened it first
  } catch (const Error&) {      // its outcome shows in the next look (or another member's)
  }
}

void BarrierCore::give_up(const std::string& record, const std::string& what,
                          const Deadline& deadline) {
  // Withdraw from the round (it breaks for the others) unless it is over already.
  const Deadline bound = grace();
  try {
    for (;;) {
      const auto snapshot = look(bound);
      if (!snapshot) break;
      if (round_over(*snapshot, record)) return;
      std::vector<Operation> ops{op::Check{folder_, round_version_}};
      if (listed(snapshot->children, record)) ops.emplace_back(op::Remove{path_of(record), 0});
      if (listed(snapshot->children, mine())) ops.emplace_back(op::Remove{*node_, 0});
      try {
        const ReplyDeadline replies(bound);
        if (session_.multi(ops).committed) break;
      } catch (const ConnectionLoss&) {
      } catch (const SessionExpired&) {
      }
    }
  } catch (const Timeout&) {
  }
  forget_round();
  deadline.expire(what);
}

void BarrierCore::forget_round() {
  release_node();
  node_.reset();
  round_.reset();
}

void BarrierCore::broken(const std::string& why, const std::string& record) {
  try {
    const ReplyDeadline replies(grace());
    session_.remove(path_of(record), 0);
  } catch (const Error&) {  // none was made (or it is gone already)
  }
  forget_round();
  throw BarrierBroken("barrier " + name_ + ": " + why);
}

}  // namespace avout::detail
