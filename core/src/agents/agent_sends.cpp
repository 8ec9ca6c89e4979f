// Sends: send, send_named, a send inside dosync (a create in its commit) or inside an action
// (made once the action's value is stored), and this process's local queue of them.
#include "agents/agent_core.hpp"
#include "agents/agent_workers.hpp"
#include "agents/send_names.hpp"
#include "runtime/node_cache.hpp"
#include "runtime/runtime.hpp"
#include "stm/participant.hpp"
#include "zk/multi_size.hpp"

#include <avout/errors.hpp>

#include <utility>

namespace avout::detail {

void AgentCore::define(const std::string& name, NamedAgentAction action) {
  named_.define(name, std::move(action));
}

void AgentCore::send_named(const std::string& name, Bytes arguments, bool blocking,
                           const Deadline& deadline) {
  const std::shared_ptr<const NamedAgentAction> named = named_.find(name);
  if (!named) {
    throw UndefinedAction("agent " + name_ + ": send: no action named '" + name +
                          "' is defined by this handle (Agent::define; each handle has its own)");
  }
  try {
    named->check(arguments);
  } catch (const CodecError& error) {
    throw CodecError("agent " + name_ + ": send of action '" + name + "': " + error.what());
  }
  Bytes node = encode_named_send(name, arguments, blocking);
  submit([named, arguments](const Bytes& value) { return named->run(value, arguments); },
         std::move(node), blocking, deadline);
}

void AgentCore::send(AgentAction action, bool blocking, const Deadline& deadline) {
  submit(std::move(action), std::nullopt, blocking, deadline);
}

std::int32_t AgentCore::head_version_for_send(const Deadline& bound, const std::string& what) {
  // A failed agent refuses sends until restart (its head is usually cached: no round trip).
  auto lookup = runtime_.nodes().begin(head_path_);
  if (!lookup.known && bound.bounded()) {
    bool arrived = true;
    try {
      arrived = session_.wait(lookup.reply, bound).has_value();
    } catch (const Error&) {
      // finish() throws it again, once it dropped the failed read from the cache.
    }
    if (!arrived) bound.expire(what);  // nothing sent yet
  }
  const auto head_node = runtime_.nodes().finish(lookup);
  const std::int32_t head_version = head_node.stat.version;
  auto head = decode_agent_head(head_node.data, head_path_);
  if (head.error) {
    throw AgentFailed("agent " + name_ + " failed (" + *head.error + "); restart it first");
  }
  return head_version;
}

void AgentCore::submit(AgentAction action, std::optional<Bytes> named, bool blocking,
                       const Deadline& deadline) {
  // Inside dosync or an action the send is part of that commit: no deadline of its own.
  const Deadline bound =
      OpenTransaction::current() != nullptr || in_action() ? Deadline{} : deadline;
  const std::string what = "agent " + name_ + ": send";
  if (bound.expired()) bound.expire(what);
  const std::int32_t head_version = head_version_for_send(bound, what);
  const std::string tag = (named ? "n" : "") + runtime_.new_point().id;
  Bytes data = named ? std::move(*named) : Bytes{};
  // Rule 11: over one request, the server would drop the connection instead of answering.
  if (const std::size_t bytes = send_create_size(tag, data); bytes > multi_limit) {
    throw ValueTooLarge(what + ": its node would take about " + std::to_string(bytes) +
                        " bytes, over the " + std::to_string(multi_limit) +
                        " ZooKeeper accepts in one request; nothing was sent");
  }
  const bool is_named = named.has_value();
  // Taken before the create: the same generation later means the node cannot have gone with
  // an expired session.
  const std::uint64_t generation = session_.generation();
  if (auto* transaction = OpenTransaction::current()) {
    return send_with_commit(*transaction, tag, std::move(data), std::move(action), blocking,
                            is_named, generation);
  }
  // The send waits for its node: once send() returns its place in the global order is fixed,
  // so a send that returned before another began runs first.
  // A send made by an action is made again when its create failed: the data is copied, and
  // the action moved only once the node is made.
  auto go = [self = shared_from_this(), tag, data = std::move(data), action = std::move(action),
             blocking, bound, is_named, generation, head_version]() mutable {
    auto node = self->create_send(tag, data, head_version, bound);
    self->enqueue(std::move(node), std::move(action), blocking, is_named, generation);
  };
  if (sends_of_running_action != nullptr) {
    sends_of_running_action->push_back(std::move(go));  // after the action's value is stored
  } else {
    go();
  }
}

void AgentCore::send_with_commit(OpenTransaction& transaction, const std::string& tag, Bytes data,
                                 AgentAction action, bool blocking, bool named,
                                 std::uint64_t generation) {
  // Sent only if, and once, the transaction commits: a create inside its commit multi.
  auto in_doubt = std::make_shared<SendInDoubt>(shared_from_this(), tag,
                                                std::make_shared<AgentAction>(std::move(action)),
                                                blocking, named, generation);
  transaction.add_to_commit({queue_.create_op(send_prefix(tag), std::move(data))},
                            [in_doubt](const std::vector<OperationResult>& results) {
                              in_doubt->landed = true;
                              if (results.empty())
                                return;  // the reply was lost: found in the background
                              in_doubt->settled = true;
                              in_doubt->agent->enqueue(
                                  results.front().created_path, std::move(*in_doubt->action),
                                  in_doubt->blocking, in_doubt->named, in_doubt->generation);
                            });
}

void AgentCore::enqueue(std::string node, AgentAction action, bool blocking, bool named,
                        std::uint64_t generation, std::optional<std::uint64_t> ticket) {
  if (!ticket) ticket = tickets_.issue();
  bool first = false;
  {
    std::lock_guard lock(mutex_);
    // Kept alive by the workers while sends are queued, even when every handle is gone.
    if (pending_.empty()) workers_->retain(shared_from_this());
    const std::int32_t sequence = sequence_of(name_of(node)).value();
    auto placed = pending_.emplace(
        sequence,
        Pending{std::move(node), std::move(action), blocking, {}, named, generation, *ticket});
    first = placed.first == pending_.begin();
    if (placed.second) metrics_.agent_queue(name_, 1);
  }
  // A send that goes before the one being waited for must be looked at now; one behind it
  // is reached once those before it finish.
  if (first) kick();
}

AgentCore::PendingMap::iterator AgentCore::find_pending(const std::string& node) {
  const auto sequence = sequence_of(name_of(node));
  return sequence ? pending_.find(*sequence) : pending_.end();
}

std::optional<std::uint64_t> AgentCore::erase_pending(const std::string& node) {
  const auto pending = find_pending(node);
  if (pending == pending_.end()) return std::nullopt;
  const std::uint64_t ticket = pending->second.ticket;
  pending_.erase(pending);
  metrics_.agent_queue(name_, -1);
  return ticket;
}

AgentCore::SendInDoubt::~SendInDoubt() {
  // The commit's reply was lost, or the dosync ended in OutcomeUnknown (or failed: then
  // nothing is found): a node that landed must run here, its closure's only runner, or it
  // would hold the queue for every process while this session lives.
  if (settled || !agent) return;
  std::optional<std::uint64_t> ticket;
  if (landed) ticket = agent->tickets_.issue();  // await waits for it from now
  try {
    agent->workers_->post(true, [agent = agent, tag = tag, action = action, blocking = blocking,
                                 named = named, generation = generation, ticket] {
      std::optional<std::string> found;
      try {
        found = agent->locate_send(tag);
      } catch (const Error&) {
      }
      if (found)
        agent->enqueue(*found, std::move(*action), blocking, named, generation, ticket);
      else if (ticket)
        agent->tickets_.drop(ticket);
    });
  } catch (...) {
    // Workers stopped: the node goes with this client's session.
    if (ticket) agent->tickets_.drop(ticket);
  }
}

}  // namespace avout::detail
