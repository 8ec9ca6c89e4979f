// Batches: planning the run of the sends first in the queue (this process's oldest and the
// runnable sends right behind it) and applying them in memory, one after another, committed
// in one multi (marker, versioned head, deletes of their send nodes).
#include "agents/agent_core.hpp"
#include "agents/agent_workers.hpp"
#include "agents/send_names.hpp"
#include "base/log.hpp"
#include "runtime/layout.hpp"
#include "runtime/node_cache.hpp"
#include "runtime/pending_markers.hpp"
#include "runtime/runtime.hpp"
#include "runtime/zookeeper_held_values.hpp"
#include "zk/multi_size.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <future>
#include <iterator>
#include <unordered_set>
#include <utility>

namespace avout::detail {

std::vector<AgentCore::Runnable> AgentCore::plan(Pending& front) {
  const std::string own = name_of(front.node);
  std::vector<std::string> queue;
  {
    // Sequence numbers only grow, so nothing can get in front of a node later: when every
    // node listed before ours is known to be gone, ours is first without asking again.
    std::lock_guard lock(mutex_);
    queue = known_queue_;
  }
  bool listed = false;
  if (queue.empty() || queue.front() != own) {
    queue = list_queue();
    listed = true;
  }
  while (true) {
    const auto mine = std::find(queue.cbegin(), queue.cend(), own);
    if (mine == queue.cend()) {
      if (listed) throw SendVanished{gone_from(queue)};
      queue = list_queue();
      listed = true;
      continue;
    }
    if (mine != queue.cbegin()) {
      // The sender of the first send drives: it runs the named sends behind its own, ours
      // among them, so racing it for the same run would only cost failed multis.
      if (watch_predecessor(queue, own)) return {};  // the watch brings us back
      queue = list_queue();
      listed = true;
      continue;
    }
    learn_named_sends(queue);
    if (auto batch = gather(front, queue, mine, listed)) return std::move(*batch);
    queue = list_queue();
    listed = true;
  }
}

std::optional<std::vector<AgentCore::Runnable>> AgentCore::gather(
    Pending& front, const std::vector<std::string>& queue,
    std::vector<std::string>::const_iterator mine, bool listed) {
  // The first in the queue on: ours and the runnable sends behind it, as long as they
  // follow one another; a send this process cannot run must see the value before it.
  const std::size_t chroot = session_.options().chroot.size();
  std::size_t bytes = fixed_multi_bytes();
  std::vector<Runnable> batch;
  std::lock_guard lock(mutex_);
  auto next = find_pending(front.node);
  auto at = mine;
  auto add = [&](Runnable one) {
    bytes += serialized_size(op::Remove{one.node, 0}, chroot);
    if (!batch.empty() && (bytes > multi_limit || batch.size() == max_batch)) return false;
    batch.push_back(std::move(one));
    return true;
  };
  (void)add(Runnable{front.node, &front, {}});
  for (++at, ++next; at != queue.cend(); ++at) {
    if (next != pending_.end() && name_of(next->second.node) == *at) {
      // One pool per batch; a send whose earlier commit is in doubt is resolved alone.
      Pending& candidate = next->second;
      if (candidate.blocking != front.blocking || candidate.in_doubt ||
          !add(Runnable{candidate.node, &candidate, {}})) {
        break;
      }
      ++next;
      continue;
    }
    auto action = runnable(*at, front.blocking);
    if (!action || !add(Runnable{queue_path_ + "/" + *at, nullptr, std::move(*action)})) break;
  }
  // Sends made since the last listing may follow: list once to find out.
  const bool more_of_ours = at == queue.cend() && next != pending_.end() &&
                            next->second.blocking == front.blocking && batch.size() < max_batch;
  if (listed || !more_of_ours) return batch;
  return std::nullopt;
}

void AgentCore::learn_named_sends(const std::vector<std::string>& queue) {
  // Send nodes never change: each is read once, all of a listing's new ones at once.
  const std::unordered_set<std::string_view> listed(queue.begin(), queue.end());
  std::erase_if(named_sends_, [&](const auto& known) { return !listed.contains(known.first); });
  std::vector<std::pair<std::string, std::future<NodeData>>> reads;
  for (const auto& node : queue) {
    bool ours = false;
    {
      std::lock_guard lock(mutex_);
      const auto pending = find_pending(node);
      ours = pending != pending_.end() && name_of(pending->second.node) == node;
    }
    if (is_named_send(node) && !ours && !named_sends_.contains(node)) {
      reads.emplace_back(node, session_.get_async(queue_path_ + "/" + node));
    }
  }
  for (auto& [node, read] : reads) {
    Bytes data;
    try {
      data = session_.wait(read).data;
    } catch (const NoNode&) {
      continue;  // already run: the next listing will not hold it
    }
    std::optional<NamedSend> send;
    try {
      send = decode_named_send(data, queue_path_ + "/" + node);
    } catch (const CodecError& error) {
      // A newer format: only its sender runs it.
      log(workers_->logger(), LogLevel::warning, "agent " + name_ + ": " + error.what());
    }
    named_sends_[node] = std::move(send);
  }
}

std::optional<AgentAction> AgentCore::runnable(const std::string& node, bool blocking) {
  const auto known = named_sends_.find(node);
  if (known == named_sends_.end() || !known->second || known->second->blocking != blocking) {
    return std::nullopt;
  }
  const std::shared_ptr<const NamedAgentAction> named = named_.find(known->second->action);
  if (!named) return std::nullopt;
  return [named, arguments = known->second->arguments](const Bytes& value) {
    return named->run(value, arguments);
  };
}

AgentCore::Step AgentCore::apply(std::vector<Runnable> batch, Pending& front,
                                 std::vector<std::string>& done) {
  // Rule 2: the commit goes out on the session its value is written for, or not at all.
  const std::uint64_t generation = session_.generation();
  auto lookup = runtime_.nodes().begin(head_path_);  // read ahead after our last commit
  auto head_node = runtime_.nodes().finish(lookup);
  auto head = decode_agent_head(head_node.data, head_path_);
  InDoubt commit{runtime_.layout().marker(runtime_.new_point().id),
                 head.point,
                 std::nullopt,
                 false,
                 {},
                 {},
                 0,
                 {}};
  std::vector<Operation> operations;
  std::vector<Operation> value_operations;  // a ZooKeeper-held value's, for the multi
  operations.push_back(op::Create{commit.marker, {}, CreateMode::persistent});
  auto head_update = head_operation(batch, head_node, head, commit, value_operations);
  if (!head_update) {
    forget_listing();
    return Step::again;
  }
  operations.push_back(std::move(*head_update));
  for (const Runnable& each : batch) {
    operations.push_back(op::Remove{each.node, 0});
    commit.nodes.push_back(each.node);
  }
  // The new value's create, then the replaced value's removal: clean-up, which a removal
  // that finds its node gone already must not fail.
  const std::size_t cleanup = value_operations.empty() ? 0 : 1;
  for (auto& operation : value_operations) operations.push_back(std::move(operation));
  return commit_batch(std::move(commit), std::move(operations), cleanup, generation, front, done);
}

std::optional<Operation> AgentCore::head_operation(const std::vector<Runnable>& batch,
                                                   const NodeData& head_node, const AgentHead& head,
                                                   InDoubt& commit,
                                                   std::vector<Operation>& value_operations) {
  if (head.error) {
    // A failed agent drops the actions still queued; only restart brings it back.
    count_unrun(commit, batch, 0, *head.error);
    return op::Check{head_path_, head_node.stat.version};
  }
  auto current = runtime_.fetch_value(*data_, head.point);
  if (!current && session_.get(head_path_).stat.version != head_node.stat.version) {
    return std::nullopt;  // another process's batch moved the head and erased the value
  }
  if (!current) {
    throw BackendError("agent " + name_ + ": its value (point " + head.point.id +
                       ") is missing from its store");
  }
  AgentHead next_head{head.point, std::nullopt};
  Bytes value = std::move(*current);
  if (run_actions(batch, value, next_head, commit)) {
    runtime_.announce_session();
    commit.written = runtime_.new_point();
    value_operations = held_value_operations(value, *commit.written, head.point, batch);
    commit.in_multi = !value_operations.empty();
    if (!commit.in_multi) data_->set(value, *commit.written);
    runtime_.remember(*commit.written, value);
    next_head.point = *commit.written;
  }
  return op::SetData{head_path_, encode_agent_head(next_head), head_node.stat.version};
}

void AgentCore::count_unrun(InDoubt& commit, const std::vector<Runnable>& batch, std::size_t first,
                            const std::string& error) {
  for (std::size_t i = first; i < batch.size(); ++i) commit.unrun += batch[i].own != nullptr;
  if (commit.unrun > 0) commit.error = error;
}

bool AgentCore::run_actions(const std::vector<Runnable>& batch, Bytes& value, AgentHead& next_head,
                            InDoubt& commit) {
  // Each action sees the value the one before it left; only the last is stored. The
  // first that fails stops the batch: the head keeps the value before it, with its
  // error, and the sends behind it are deleted unrun, as a failed agent drops them.
  bool changed = false;
  std::size_t ran = 0;  // the actions run, the failed one included
  for (const Runnable& each : batch) {
    ++ran;
    std::vector<std::function<void()>> sends;
    Bytes next;
    sends_of_running_action = &sends;
    const auto started = metrics_.start();
    try {
      next = each.own != nullptr ? each.own->action(value) : each.action(value);
      require_fits(next.size(), max_value_size_, "agent " + name_);
      if (!accepts(next)) next_head.error = "the validator rejected the new value";
    } catch (const std::exception& error) {
      next_head.error = error.what();
    } catch (...) {
      next_head.error = "a non-standard exception";
    }
    sends_of_running_action = nullptr;
    metrics_.action_ran(started);  // failed ones too
    if (next_head.error) {
      count_unrun(commit, batch, ran, *next_head.error);
      break;  // a failed action's sends never go out (as in Clojure)
    }
    value = std::move(next);
    changed = true;
    for (auto& go : sends) commit.later_sends.push_back(std::move(go));
  }
  return changed;
}

AgentCore::Step AgentCore::commit_batch(InDoubt commit, std::vector<Operation> operations,
                                        std::size_t cleanup, std::uint64_t generation,
                                        Pending& front, std::vector<std::string>& done) {
  MultiResult result;
  // Markers it carries stay waiting while its outcome is in doubt: one a later commit finds
  // gone is dropped then. A lost reply landed when the head names the value (rule 6: gc may
  // have removed the marker by the time it is asked for).
  std::optional<bool> landed;
  try {
    landed = runtime_.markers().commit(
        std::move(operations), commit.marker, &result, cleanup,
        [&] { return head_names(commit.written); }, generation);
  } catch (const SessionExpired&) {
    // Renewed before the multi went out: nothing was sent, and the batch's own send node went
    // with the old session. Its value is unreferenced; the next plan settles the sends.
    if (commit.written && !commit.in_multi) erase_quietly(*commit.written);
    forget_listing();
    return Step::again;
  }
  if (!landed) {
    front.in_doubt = std::move(commit);  // resolved before anything else is tried
    return Step::retry_later;
  }
  if (*landed) {
    done = commit.nodes;
    complete(commit);
    return Step::finished;
  }
  if (commit.written && !commit.in_multi) erase_quietly(*commit.written);
  // Another process ran some of these sends, a send vanished, or the head moved (a restart):
  // the queue is read again and the batch planned anew.
  forget_listing();
  return Step::again;
}

std::size_t AgentCore::fixed_multi_bytes() const {
  // The marker and the head (its error message included) fit in the first few KB; the
  // carried markers (rule 16) take their most, one point id each.
  const std::size_t chroot = session_.options().chroot.size();
  return serialized_size(op::SetData{head_path_, Bytes(4096), 0}, chroot) +
         serialized_size(op::Create{runtime_.layout().markers(), {}}, chroot) + 64 +
         PendingMarkers::per_thread *
             serialized_size(op::Remove{runtime_.layout().marker(std::string(64, '0')), 0}, chroot);
}

std::vector<Operation> AgentCore::held_value_operations(const Bytes& value, const Point& point,
                                                        const Point& previous,
                                                        const std::vector<Runnable>& batch) const {
  auto create = commit_operation(*data_, value, point);
  if (!create) return {};
  const std::size_t chroot = session_.options().chroot.size();
  auto remove = op::Remove{commit_operation(*data_, {}, previous)->path, 0};
  std::size_t bytes =
      fixed_multi_bytes() + serialized_size(*create, chroot) + serialized_size(remove, chroot);
  for (const Runnable& each : batch) bytes += serialized_size(op::Remove{each.node, 0}, chroot);
  if (bytes > multi_limit) return {};  // rule 11: the value goes to the store before the multi
  return {std::move(*create), std::move(remove)};
}

bool AgentCore::head_names(const std::optional<Point>& point) {
  return point && decode_agent_head(session_.get(head_path_).data, head_path_).point == *point;
}

void AgentCore::erase_quietly(const Point& point) {
  try {
    data_->erase(point);
  } catch (const Error&) {
    // Left for gc: an unreferenced point is garbage, never visible.
  }
}

void AgentCore::forget_listing() {
  std::lock_guard lock(mutex_);
  known_queue_.clear();
}

}  // namespace avout::detail
