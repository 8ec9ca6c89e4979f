// The send nodes of an agent's queue: creating them (the sends of several threads in one
// multi), finding one whose create's reply was lost, creating it again when that cannot run
// it twice, listing the queue in sequence order and watching a predecessor. Kept together:
// they are to move onto the one sequential-queue engine (issue 37, item 2).
#include "agents/agent_core.hpp"
#include "agents/agent_workers.hpp"
#include "agents/send_names.hpp"
#include "base/back_off.hpp"
#include "runtime/marked_commit.hpp"
#include "zk/multi_size.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <chrono>
#include <stop_token>
#include <thread>
#include <unordered_set>
#include <utility>

namespace avout::detail {

bool AgentCore::head_exists_after_outage() {
  const auto deadline = std::chrono::steady_clock::now() + session_.options().session_timeout;
  while (true) {
    try {
      auto synced = session_.sync_async(head_path_);
      auto found = session_.exists_async(head_path_);
      session_.wait(synced);
      const auto stat = session_.wait(found);
      return stat && stat->data_length > 0;
    } catch (const ConnectionLoss&) {
    } catch (const SessionExpired&) {
    }
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string AgentCore::send_prefix(const std::string& tag) const {
  return queue_path_ + "/s-" + tag + "-";
}

std::size_t AgentCore::send_create_size(const std::string& tag, const Bytes& data) const {
  constexpr std::size_t sequence_digits = 10;  // the server appends them to the prefix
  // Counted without building the op, which would copy the arguments.
  return serialized_size(send_prefix(tag).size() + sequence_digits, data.size(),
                         session_.options().chroot.size());
}

std::size_t AgentCore::sends_fitting_one_request() const {
  std::size_t count = 0;
  std::size_t bytes = 0;
  for (const auto& one : to_create_) {
    bytes += send_create_size(one->tag, one->data);
    if (count == max_batch || (count > 0 && bytes > multi_limit)) break;
    ++count;
  }
  return count;
}

std::optional<std::string> AgentCore::locate_send(const std::string& tag) {
  while (true) {
    try {
      // The sync makes the listing at least as new as the create whose reply was lost; on a
      // renewed session, the create's session is known ended, and its ephemeral node with it.
      auto synced = session_.sync_async(queue_path_);
      auto listed = session_.children_async(queue_path_);
      session_.wait(synced);
      for (const auto& child : session_.wait(listed)) {
        if (child.rfind("s-" + tag + "-", 0) == 0) return queue_path_ + "/" + child;
      }
      return std::nullopt;
    } catch (const SessionExpired&) {
      // The renewed session's listing answers next.
    } catch (const ConnectionLoss&) {
    }
    // Never absent from silence alone (item 6 of issue 35): while the whole ensemble is down,
    // ZooKeeper restarts session timers when a leader returns, so the session may live on.
    if (workers_->stopping()) {
      throw ConnectionLoss("agent " + name_ + ": the client closed while ZooKeeper was "
                           "unreachable: whether send node " + send_prefix(tag) +
                           "* exists is unknown (it goes with this client's session)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string AgentCore::create_send(const std::string& tag, Bytes data, std::int32_t head_version,
                                   const Deadline& deadline) {
  // Threads that send at once share one multi of creates: their nodes come out next to one
  // another in the queue, so their actions run in one batch. A send begun after another
  // returned goes in a later multi, so it still comes later in the queue.
  auto mine = std::make_shared<Creating>(Creating{tag, std::move(data), head_version, {}, {}, false, false, false});
  // A stop request wakes this thread's waits (made before the lock: it may run at once).
  std::stop_callback wake_on_stop(deadline.stop_token(), [this] {
    std::lock_guard lock(create_mutex_);
    created_.notify_all();
  });
  std::unique_lock lock(create_mutex_);
  to_create_.push_back(mine);
  while (!mine->done) {
    if (!mine->taken && !creating_) {
      creating_ = true;
      // Bounded like a batch, and by rule 11's size: the arguments of named sends count.
      const auto taken =
          to_create_.begin() + static_cast<std::ptrdiff_t>(sends_fitting_one_request());
      const Group group(to_create_.begin(), taken);
      to_create_.erase(to_create_.begin(), taken);
      for (const auto& one : group) one->taken = true;
      lock.unlock();
      create_together(group, deadline);  // settled, or handed to a worker when late
      lock.lock();
      creating_ = false;
      created_.notify_all();
      continue;
    }
    if (deadline.expired()) {
      // Not sent yet: nothing to undo. Sent: whoever settles its create deletes the node.
      if (mine->taken) mine->abandoned = true;
      else std::erase(to_create_, mine);
      lock.unlock();
      // A named send's node may already be there, and any process that defined the name
      // (this one too: it is in no pending_) may run it before the delete: Timeout would
      // promise too much. A closure's node only its sender runs, from pending_: never.
      if (mine->taken && is_named_tag(tag)) {
        throw OutcomeUnknown("agent " + name_ + ": send: " +
                             (deadline.stop_requested() ? "cancelled" : "deadline passed") +
                             " after its create went out: the named action may run once "
                             "(its node, if made, is deleted in the background)");
      }
      deadline.expire("agent " + name_ + ": send");
    }
    created_.wait_until(lock, deadline.time_or_far(), [&] {
      return mine->done || (!mine->taken && !creating_) || deadline.stop_requested();
    });
  }
  if (mine->error) std::rethrow_exception(mine->error);
  return mine->node;
}

void AgentCore::create_together(const Group& group, const Deadline& deadline) {
  CreateReply reply;
  if (group.size() == 1) {
    auto created = session_.create_async(send_prefix(group.front()->tag), group.front()->data,
                                         CreateMode::ephemeral_sequential).share();
    reply = [this, created](const Deadline& by) -> std::optional<std::vector<std::string>> {
      auto path = session_.wait(created, by);
      if (!path) return std::nullopt;
      return std::vector<std::string>{std::move(*path)};
    };
  } else {
    std::vector<Operation> operations;
    for (const auto& one : group) {
      operations.push_back(
          op::Create{send_prefix(one->tag), one->data, CreateMode::ephemeral_sequential});
    }
    auto committed = session_.multi_async(operations).share();
    reply = [this, committed, operations](const Deadline& by) -> std::optional<std::vector<std::string>> {
      auto result = session_.wait(committed, by);
      if (!result) return std::nullopt;
      result->throw_if_failed(operations);
      std::vector<std::string> paths;
      for (const auto& created : result->results) paths.push_back(created.created_path);
      return paths;
    };
  }
  if (!deadline.bounded()) return settle(group, reply);
  try {
    if (auto paths = reply(deadline)) {
      for (std::size_t i = 0; i < group.size(); ++i) finish_create(*group[i], (*paths)[i], {});
      return;
    }
  } catch (...) {
    // settle() reads the same reply again and handles what it threw.
  }
  // Late or lost: a worker settles the group, so that this sender can give up in time.
  workers_->post(true, [self = shared_from_this(), group, reply] { self->settle(group, reply); });
}

void AgentCore::settle(const Group& group, const CreateReply& reply) {
  auto settle_each = [&](auto&& make) {
    for (const auto& one : group) {
      try {
        finish_create(*one, make(*one), {});
      } catch (...) {
        finish_create(*one, std::nullopt, std::current_exception());
      }
    }
  };
  try {
    const auto paths = reply(Deadline{});
    for (std::size_t i = 0; i < group.size(); ++i) finish_create(*group[i], (*paths)[i], {});
  } catch (const ConnectionLoss&) {
    // The creates may have landed, all of them or none: each send finds its node, or makes
    // it unless its sender gave up.
    settle_each([&](const Creating& one) {
      if (auto found = locate_send(one.tag)) return found;
      return create_again(one);
    });
  } catch (const SessionExpired&) {
    // A create that landed went with the session: the node is gone, not necessarily unrun.
    settle_each([&](const Creating& one) { return create_again(one); });
  } catch (...) {
    for (const auto& one : group) finish_create(*one, std::nullopt, std::current_exception());
  }
}

void AgentCore::finish_create(Creating& one, std::optional<std::string> node,
                              std::exception_ptr error) {
  bool orphan = false;
  {
    std::lock_guard lock(create_mutex_);
    if (node) one.node = *node;
    one.error = std::move(error);
    one.done = true;
    orphan = one.abandoned && node;
    created_.notify_all();
  }
  // Nobody will run its action, and it would hold the queue for everyone behind it.
  if (orphan) {
    workers_->post(true, [self = shared_from_this(), node = *node] { self->remove_abandoned(node); });
  }
}

bool AgentCore::gave_up(const Creating& one) {
  std::lock_guard lock(create_mutex_);
  return one.abandoned;
}

void AgentCore::remove_abandoned(const std::string& node) {
  // Until ZooKeeper says the node is gone, never from silence alone (item 6 of issue 35): a
  // session unreachable for three timeouts may live on, its orphan blocking the queue.
  for (std::size_t attempt = 0;; ++attempt) {
    try {
      session_.remove(node, 0);  // send nodes are never changed: version 0
      return;
    } catch (const NoNode&) {
      return;
    } catch (const SessionExpired&) {
      return;  // the node went with the session
    } catch (const ConnectionLoss&) {
    }
    if (workers_->stopping()) return;  // it goes with this client's session
    (void)back_off(attempt, Deadline{}, outage_pauses);
  }
}

std::optional<bool> AgentCore::head_moved_since(std::int32_t version) {
  try {
    // After the sync the head is at least as new as any batch that ran the send.
    auto synced = session_.sync_async(head_path_);
    auto read = session_.get_async(head_path_);
    session_.wait(synced);
    return session_.wait(read).stat.version != version;
  } catch (const ConnectionLoss&) {
  } catch (const SessionExpired&) {
  }
  return std::nullopt;
}

std::optional<std::string> AgentCore::create_again(const Creating& one) {
  const auto resolution = resolution_deadline(session_);
  for (std::size_t attempt = 0;; ++attempt) {
    if (gave_up(one)) return std::nullopt;  // its sender timed out: make nothing more
    // A named send's node may have landed and been run and deleted by a process that
    // defined the name (this one included) before it could be found: "not found" does not
    // mean "not sent", and creating it again could run it twice, unless no batch committed
    // since the send was made (a batch that runs a send moves the head). A closure's node
    // only this process runs, from pending_, where it is not yet: one not found never ran.
    const auto moved = is_named_tag(one.tag) ? head_moved_since(one.head_version)
                                              : std::optional<bool>(false);
    if (moved == true) {
      throw OutcomeUnknown("agent " + name_ + ": send: ZooKeeper lost the reply to the create "
                           "of a named send and its node is gone: another process may have "
                           "run it (it ran once or not at all; not sent again)");
    }
    if (moved == false) {  // else ZooKeeper did not answer: asked again after a pause
      try {
        return session_.create(send_prefix(one.tag), one.data, CreateMode::ephemeral_sequential);
      } catch (const ConnectionLoss&) {
        // The create may have landed: find it before creating again, so no orphan is left.
        if (auto found = locate_send(one.tag)) return found;
      } catch (const SessionExpired&) {
        // A create that landed went with the session: its node is gone, maybe run.
      }
    }
    if (!back_off(attempt, Deadline::at(resolution), outage_pauses)) {
      throw ConnectionLoss("agent " + name_ + ": ZooKeeper unreachable, send not made (no node " +
                           send_prefix(one.tag) + "* left behind)");
    }
  }
}

bool AgentCore::watch_until_gone(const std::string& node) {
  // A waiter watches one send before its own: no herd when one finishes.
  std::weak_ptr<AgentCore> weak = weak_from_this();
  auto still_there =
      session_.exists(queue_path_ + "/" + node, [weak, node](const WatchEvent& event) {
        auto self = weak.lock();
        if (!self) return;
        if (event.type == WatchEventType::deleted) {
          std::lock_guard lock(self->mutex_);
          std::erase(self->known_queue_, node);
        }
        self->kick();
      });
  return !still_there.has_value();
}

std::vector<std::string> AgentCore::list_queue() {
  // Every send made before the listing is asked for is in it unless it is gone: so is every
  // send of a lower sequence, made before one of those.
  std::optional<std::int32_t> made_before;
  {
    std::lock_guard lock(mutex_);
    if (!pending_.empty()) made_before = pending_.rbegin()->first;
  }
  // Only send nodes: the queue of an agent named /x also holds the folder of /x/y.
  auto children = session_.children(queue_path_);
  std::erase_if(children, [](const std::string& child) {
    return child.rfind("s-", 0) != 0 || !sequence_of(child);
  });
  std::sort(children.begin(), children.end(), [](const auto& a, const auto& b) {
    return SequenceOrder{}(*sequence_of(a), *sequence_of(b));
  });
  std::lock_guard lock(mutex_);
  known_queue_ = children;
  listed_up_to_ = made_before;
  return children;
}

std::vector<std::string> AgentCore::gone_from(const std::vector<std::string>& listing) {
  const std::unordered_set<std::string> listed(listing.begin(), listing.end());
  std::vector<std::string> gone;
  std::lock_guard lock(mutex_);
  for (const auto& [sequence, pending] : pending_) {
    if (!listed_up_to_ || SequenceOrder{}(*listed_up_to_, sequence)) break;
    if (!listed.contains(last_segment(pending.node))) gone.push_back(pending.node);
  }
  return gone;
}

}  // namespace avout::detail
