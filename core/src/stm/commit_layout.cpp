#include "stm/commit_layout.hpp"

#include <utility>

namespace avout::detail {

CommitRole commit_role(bool written, bool ensured, bool commuted) {
  if (written || ensured) return CommitRole::fixed;
  if (commuted) return CommitRole::commuted;
  return CommitRole::none;
}

CommitMulti lay_out_commit_multi(CommitPlan plan) {
  CommitMulti multi;
  auto& operations = multi.operations;
  operations.push_back(op::Create{std::move(plan.marker), {}, CreateMode::persistent});
  for (auto& head : plan.fixed) {
    if (head.record) {
      multi.heads_set.push_back(operations.size());
      operations.push_back(
          op::SetData{std::move(head.path), std::move(*head.record), head.version});
    } else {
      operations.push_back(op::Check{std::move(head.path), head.version});
    }
  }
  for (auto& head : plan.read_checks)
    operations.push_back(op::Check{std::move(head.path), head.version});
  multi.first_commuted = operations.size();
  for (auto& head : plan.commuted) {
    multi.heads_set.push_back(operations.size());
    operations.push_back(
        op::SetData{std::move(head.path), std::move(head.record).value_or(Bytes{}), head.version});
  }
  for (auto& tag : plan.tags) operations.push_back(std::move(tag));
  multi.first_addition = operations.size();
  for (auto& addition : plan.additions) {
    for (auto& operation : addition) operations.push_back(std::move(operation));
  }
  multi.after_additions = operations.size();
  // Values created by the multi cannot fail (fresh points): right before the clock.
  for (auto& value : plan.values) operations.push_back(std::move(value));
  // Rule 1: the clock is the one op sent at -1 (any version).
  operations.push_back(op::SetData{std::move(plan.clock), {}, -1});
  // Value nodes and markers are created once and never changed: version 0 is theirs.
  multi.first_cleanup = operations.size();
  for (auto& path : plan.cleanup) {
    if (!plan.gone.contains(path)) operations.push_back(op::Remove{std::move(path), 0});
  }
  return multi;
}

}  // namespace avout::detail
