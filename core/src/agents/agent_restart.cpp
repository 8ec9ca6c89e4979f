// A failed agent: its error, and restart, which clears it and sets a new value.
#include "agents/agent_core.hpp"
#include "runtime/layout.hpp"
#include "runtime/pending_markers.hpp"
#include "runtime/runtime.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

std::optional<std::string> AgentCore::error() {
  return decode_agent_head(session_.get(head_path_).data, head_path_).error;
}

void AgentCore::restart(const Bytes& value) {
  require_fits(value.size(), max_value_size_, "agent " + name_);
  if (!accepts(value))
    throw ValidationError("agent " + name_ + ": the validator rejected the value");
  for (std::size_t attempt = 0; attempt < runtime_.options().retry_limit; ++attempt) {
    // Rule 2: the commit goes out on the session the value is written for, or not at all.
    const std::uint64_t generation = session_.generation();
    auto head_node = session_.get(head_path_);
    auto head = decode_agent_head(head_node.data, head_path_);
    if (!head.error) throw Error("agent " + name_ + " has not failed: nothing to restart");
    runtime_.announce_session();
    const Point point = runtime_.new_point();
    data_->set(value, point);
    const std::string marker = runtime_.layout().marker(runtime_.new_point().id);
    const std::vector<Operation> operations{
        op::Create{marker, {}, CreateMode::persistent},
        op::SetData{head_path_, encode_agent_head(AgentHead{point, std::nullopt}),
                    head_node.stat.version}};
    std::optional<bool> landed;
    try {
      landed = runtime_.markers().commit(
          operations, marker, nullptr, 0, [&] { return head_names(point); }, generation);
    } catch (const SessionExpired&) {
      erase_quietly(point);  // renewed before the multi went out: nothing was sent
      continue;
    }
    if (!landed) {
      // The new point may be referenced: it stays for gc to judge, like the marker.
      throw OutcomeUnknown("agent " + name_ +
                           ": restart: outcome unknown (ZooKeeper "
                           "unreachable); marker " +
                           marker);
    }
    if (*landed) {
      data_->erase(head.point);
      return;
    }
    data_->erase(point);
  }
  throw RetryLimitExceeded("agent " + name_ + ": restart kept conflicting");
}

}  // namespace avout::detail
