// The worker loop of an agent: one worker at a time looks at the oldest pending send of this
// process, resolves a batch whose commit is in doubt, runs a batch, retries while the store
// or ZooKeeper is down, and finishes the sends a batch ran or dropped.
#include "agents/agent_core.hpp"
#include "agents/agent_workers.hpp"
#include "agents/send_names.hpp"
#include "base/log.hpp"
#include "runtime/node_cache.hpp"
#include "runtime/pending_markers.hpp"
#include "runtime/runtime.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <chrono>
#include <future>
#include <thread>

namespace avout::detail {

void AgentCore::kick() {
  bool blocking = false;
  {
    std::lock_guard lock(mutex_);
    if (pending_.empty()) return;
    blocking = pending_.begin()->second.blocking;
  }
  workers_->post(blocking, [self = shared_from_this(), blocking] { self->drive(blocking); });
}

void AgentCore::finish(const std::vector<std::string>& nodes, bool dropped) {
  bool idle = false;
  std::vector<std::uint64_t> ours;  // the tickets of this process's sends among `nodes`
  {
    std::lock_guard lock(mutex_);
    // Only this process's sends count; a batch also deletes other processes' named sends.
    for (const auto& node : nodes) {
      if (const auto ticket = erase_pending(node)) ours.push_back(*ticket);
    }
    retry_delay_ = std::chrono::milliseconds(0);
    idle = !ours.empty() && pending_.empty();
  }
  tickets_.end(ours, dropped);
  if (idle) workers_->release(this);
}

void AgentCore::drive(bool pool) {
  {
    std::lock_guard lock(mutex_);
    if (running_) {
      again_ = true;  // the running worker looks once more
      return;
    }
    running_ = true;
  }
  while (true) {
    Pending* const front = claim_front(pool);
    if (front == nullptr) return;
    Step result = Step::retry_later;
    std::vector<std::string> done;  // the send nodes a finished step deleted
    try {
      result = step(*front, done);
    } catch (const SendVanished& vanished) {
      result = settle_vanished(vanished, done);
    } catch (const Deleted&) {
      drop_deleted();  // its head is a tombstone: no send of it runs any more
      continue;
    } catch (const std::exception& error) {
      // The store or ZooKeeper is unavailable: the send keeps its place and is tried again,
      // after a fresh listing (another process may have run its batch meanwhile).
      std::lock_guard lock(mutex_);
      known_queue_.clear();
      if (retry_delay_.count() == 0) {
        log(workers_->logger(), LogLevel::warning,
            "agent " + name_ + ": an action is delayed: " + error.what());
      }
    }
    if (result == Step::again) continue;
    if (result == Step::finished || result == Step::dropped) {
      finish(done, result == Step::dropped);
      continue;
    }
    if (result == Step::retry_later) return retry_after_pause();
    std::lock_guard lock(mutex_);
    if (!again_) {
      running_ = false;
      return;  // the watch on the predecessor brings us back
    }
  }
}

void AgentCore::drop_deleted() {
  std::vector<std::string> nodes;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [sequence, pending] : pending_) nodes.push_back(pending.node);
    pending_.clear();
    known_queue_.clear();
    retry_delay_ = std::chrono::milliseconds(0);
  }
  tickets_.end_deleted();
  // Send nodes are never changed after their create: version 0 is theirs. Best effort: they
  // are ephemeral, and nothing runs them any more.
  for (const auto& node : nodes) {
    try {
      (void)session_.remove_async(node, 0);
    } catch (const Error&) {
    }
  }
  if (!nodes.empty()) workers_->release(this);  // as finish() does when the last one ends
}

AgentCore::Pending* AgentCore::claim_front(bool pool) {
  {
    std::lock_guard lock(mutex_);
    again_ = false;
    if (pending_.empty()) {
      running_ = false;
      return nullptr;
    }
    Pending* front = &pending_.begin()->second;  // only this worker erases; map nodes stay put
    if (front->blocking == pool) return front;
    running_ = false;
  }
  kick();  // on the pool the oldest send asked for
  return nullptr;
}

AgentCore::Step AgentCore::settle_vanished(const SendVanished& vanished,
                                           std::vector<std::string>& done) {
  // With the session it was made in still ours, only a batch deleted a named send: another
  // process ran it. Else it went with our expired session, like a dead sender's. All the
  // sends one listing shows gone are settled at once: another process's batch often runs
  // hundreds of ours, and a listing each would leave the queue growing meanwhile.
  std::vector<std::string> ran;
  {
    const std::uint64_t generation = session_.generation();
    std::lock_guard lock(mutex_);
    for (const auto& node : vanished.nodes) {
      const auto gone = find_pending(node);
      if (gone == pending_.end()) continue;
      (gone->second.named && gone->second.generation == generation ? ran : done).push_back(node);
    }
  }
  if (!ran.empty()) finish(ran, false);
  return Step::dropped;  // `done` holds the dropped ones, if any
}

void AgentCore::retry_after_pause() {
  std::chrono::milliseconds delay;
  {
    std::lock_guard lock(mutex_);
    retry_delay_ = std::clamp(retry_delay_ * 2, std::chrono::milliseconds(50),
                              std::chrono::milliseconds(1000));
    delay = retry_delay_;
  }
  std::this_thread::sleep_for(delay);
  {
    std::lock_guard lock(mutex_);
    running_ = false;
  }
  kick();  // let other tasks of the pool run in between
}

AgentCore::Step AgentCore::step(Pending& front, std::vector<std::string>& done) {
  if (front.in_doubt) {
    if (auto resolved = resolve_in_doubt(front, done)) return *resolved;
  }
  auto batch = plan(front);
  if (batch.empty()) return Step::waiting;
  return apply(std::move(batch), front, done);
}

std::optional<AgentCore::Step> AgentCore::resolve_in_doubt(Pending& front,
                                                           std::vector<std::string>& done) {
  // Rule 6 for a batch whose multi's reply was lost, tried for as long as ZooKeeper stays
  // away, so never from its marker's absence alone: gc may have removed the marker by now.
  // After a sync: the marker, or the head naming the batch's new value, says it landed;
  // one of its send nodes still queued says it did not (the multi deletes them all).
  InDoubt& doubt = *front.in_doubt;
  bool marked = false;
  bool named = false;
  bool queued = false;
  try {
    auto synced = session_.sync_async(doubt.marker);
    auto marker = session_.exists_async(doubt.marker);
    auto head = session_.get_async(head_path_);
    std::vector<std::future<std::optional<NodeStat>>> sends;
    for (const auto& node : doubt.nodes) sends.push_back(session_.exists_async(node));
    marked = session_.wait(marker).has_value();
    session_.wait(synced);
    named = doubt.written &&
            decode_agent_head(session_.wait(head).data, head_path_).point == *doubt.written;
    for (auto& send : sends) queued = session_.wait(send).has_value() || queued;
  } catch (const ConnectionLoss&) {
    return Step::retry_later;
  } catch (const SessionExpired&) {
    return Step::retry_later;
  }
  if (marked || named) {
    done = doubt.nodes;
    if (marked) runtime_.markers().landed(doubt.marker);  // a found marker waits for removal
    complete(doubt);
    return Step::finished;
  }
  if (!queued) {
    // Landed and replaced since, or not landed and its sends run or gone elsewhere: nothing
    // tells which. Its value stays (a head may have named it), and its sends are settled
    // as vanished, as a listing that no longer shows them would.
    std::vector<std::string> nodes = std::move(doubt.nodes);
    front.in_doubt.reset();
    throw SendVanished{std::move(nodes)};
  }
  if (doubt.written && !doubt.in_multi) erase_quietly(*doubt.written);
  front.in_doubt.reset();
  return std::nullopt;
}

void AgentCore::complete(InDoubt& landed) {
  {
    std::lock_guard lock(mutex_);
    for (const auto& node : landed.nodes) std::erase(known_queue_, name_of(node));
  }
  if (landed.written && !landed.in_multi) erase_quietly(landed.previous);
  runtime_.nodes().refresh(head_path_);
  // Before finish() counts them done: await sees both.
  if (landed.unrun > 0) tickets_.add_unrun(landed.unrun, landed.error);
  for (auto& go : landed.later_sends) make_later_send(go);
}

void AgentCore::make_later_send(const std::function<void()>& go) {
  // The action that made it committed: its send must go out, as a send that returned would.
  for (std::size_t attempt = 0;; ++attempt) {
    try {
      go();
      return;
    } catch (const OutcomeUnknown& error) {
      // A named send another process may have run: making it again could run it twice.
      log(workers_->logger(), LogLevel::error,
          "agent " + name_ + ": a send made by an action may not have run: " + error.what());
      return;
    } catch (const ConnectionLoss& error) {
      // Nothing of it is left (its tag found no node): making it again is safe, and it is
      // made once ZooKeeper answers; only a client that closes meanwhile drops it.
      if (!workers_->stopping()) {
        if (attempt == 0) {
          log(workers_->logger(), LogLevel::warning,
              "agent " + name_ + ": a send made by an action is delayed: " + error.what());
        }
        continue;
      }
      log(workers_->logger(), LogLevel::error,
          "agent " + name_ +
              ": a send made by an action was dropped (client closing): " + error.what());
    } catch (const std::exception& error) {
      log(workers_->logger(), LogLevel::error,
          "agent " + name_ + ": a send made by an action was dropped: " + error.what());
    }
    tickets_.drop(std::nullopt);  // await reports it
    return;
  }
}

}  // namespace avout::detail
