// The agent's head and value: creating the agent, reading its value, the validator, await.
#include "agents/agent_core.hpp"
#include "agents/agent_workers.hpp"
#include "agents/send_names.hpp"
#include "runtime/node_cache.hpp"
#include "runtime/runtime.hpp"
#include "stm/participant.hpp"

#include <avout/codec.hpp>
#include <avout/errors.hpp>

#include <utility>

namespace avout::detail {

thread_local std::vector<std::function<void()>>* AgentCore::sends_of_running_action = nullptr;

AgentCore::AgentCore(std::string name, std::shared_ptr<ReferenceData> data,
                     std::size_t max_value_size, Runtime& runtime,
                     std::shared_ptr<AgentWorkers> workers)
    : name_(std::move(name)),
      data_(std::move(data)),
      max_value_size_(max_value_size),
      runtime_(runtime),
      metrics_(runtime.metrics()),
      session_(runtime.session()),
      workers_(std::move(workers)),
      head_path_(runtime.layout().agent_head(name_)),
      queue_path_(runtime.layout().agent_queue(name_)),
      queue_(session_, queue_path_, send_kind) {}

AgentCore::~AgentCore() {
  if (!pending_.empty()) metrics_.agent_queue(name_, -static_cast<std::int64_t>(pending_.size()));
}

bool AgentCore::in_action() { return sends_of_running_action != nullptr; }

void AgentCore::create_if_absent(const Bytes& initial) {
  // An empty node here is a folder made for a name nested below this one (/x for /x/y):
  // the agent /x does not exist yet, and its head goes into that node.
  const auto existing = session_.exists(head_path_);
  if (existing && existing->data_length > 0) return;
  require_fits(initial.size(), max_value_size_, "agent " + name_);
  session_.create_recursive(head_path_.substr(0, head_path_.rfind('/')));
  session_.create_recursive(queue_path_);
  runtime_.announce_session();
  const Point point = runtime_.new_point();
  data_->set(initial, point);
  const Bytes head = encode_agent_head(AgentHead{point, std::nullopt});
  try {
    if (existing) {
      (void)session_.set(head_path_, head, existing->version);
    } else {
      session_.create(head_path_, head);
    }
  } catch (const NodeExists&) {
    data_->erase(point);  // another process made the agent first
  } catch (const BadVersion&) {
    data_->erase(point);
  } catch (const ConnectionLoss&) {
    // The write may have landed. Any head there now means the agent exists (ours or another
    // process's: either way `point` is left for gc, which judges whether it is referenced).
    if (!head_exists_after_outage()) {
      throw OutcomeUnknown("agent " + name_ + ": creating its head " + head_path_ +
                           ": outcome unknown (ZooKeeper unreachable); making the agent "
                           "again is safe");
    }
  }
}

void AgentCore::require_kind(const Bytes& sample) {
  codec::require_same_kind(read_latest(), sample, "agent", name_);
}

Bytes AgentCore::read_latest() {
  auto head_node = session_.get(head_path_);
  while (true) {
    const auto head = decode_agent_head(head_node.data, head_path_);
    if (auto value = runtime_.fetch_value(*data_, head.point)) return *value;
    // A batch erases the value it replaced right after its commit: a point missing under a
    // head that has moved since is a re-read, lost data only while the head still names it
    // (rule 8). The sync makes the head read at least as new as the commit before the erase.
    auto synced = session_.sync_async(head_path_);
    auto again = session_.get_async(head_path_);
    session_.wait(synced);
    auto newer = session_.wait(again);
    if (newer.stat.version == head_node.stat.version) {
      throw BackendError("agent " + name_ + ": its value (point " + head.point.id +
                         ") is missing from its store");
    }
    head_node = std::move(newer);
  }
}

Deadline AgentCore::default_deadline() const {
  const auto& timeout = runtime_.options().operation_timeout;
  return timeout ? Deadline::after(*timeout) : Deadline{};
}

bool AgentCore::await_until(const Deadline& deadline) {
  if (in_action()) throw Error("agent " + name_ + ": await inside an agent action");
  if (OpenTransaction::current() != nullptr)
    throw Error("agent " + name_ + ": await inside dosync");
  if (!tickets_.wait(deadline, name_)) return false;
  // A removal by another process: its head (usually cached, no round trip) is a tombstone.
  auto lookup = runtime_.nodes().begin(head_path_);
  (void)decode_agent_head(runtime_.nodes().finish(lookup).data, head_path_);
  return true;
}

void AgentCore::set_validator(std::function<bool(const Bytes&)> validator) {
  validator_.set(std::move(validator));
}

bool AgentCore::accepts(const Bytes& value) { return validator_.accepts(value); }

}  // namespace avout::detail
