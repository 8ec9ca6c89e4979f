// The send nodes of an agent's queue, a queue of the one engine (queue/sequential_queue.hpp):
// creating them (the sends of several threads in one multi), finding one whose create's
// reply was lost, creating it again when that cannot run it twice, listing the queue in
// sequence order and watching a predecessor. "Did it land?" is the outcome module's
// (zk/outcome.hpp): never "absent" from silence, only from a listing after a sync.
#include "agents/agent_core.hpp"
#include "agents/agent_workers.hpp"
#include "agents/send_names.hpp"
#include "base/back_off.hpp"
#include "runtime/marked_commit.hpp"
#include "zk/multi_size.hpp"
#include "zk/outcome.hpp"

#include <avout/errors.hpp>

#include <stop_token>
#include <unordered_set>
#include <utility>

namespace avout::detail {

bool AgentCore::head_exists_after_outage() {
  const auto has_head = [&] {
    const auto stat = session_.exists(head_path_);
    return stat && stat->data_length > 0;  // an empty node is the folder of /x/y's head
  };
  try {
    return outcome_of(session_, head_path_, has_head,
                      Deadline::after(session_.options().session_timeout),
                      "agent " + name_ + ": looking for its head " + head_path_) == Outcome::landed;
  } catch (const Timeout&) {
    return false;  // no answer for one session timeout: the caller says OutcomeUnknown
  }
}

std::string AgentCore::send_prefix(const std::string& tag) const {
  return prefix_for(send_kind, tag);
}

std::string AgentCore::send_path_prefix(const std::string& tag) const {
  return join_path(queue_path_, send_prefix(tag));
}

std::size_t AgentCore::send_create_size(const std::string& tag, const Bytes& data) const {
  constexpr std::size_t sequence_digits = 10;  // the server appends them to the prefix
  // Counted without building the op, which would copy the arguments.
  return serialized_size(send_path_prefix(tag).size() + sequence_digits, data.size(),
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
  // The sync makes the listing at least as new as the create whose reply was lost; on a
  // renewed session, the create's session is known ended, and its ephemeral node with it.
  // Never absent from silence alone (item 6 of issue 35): while the whole ensemble is down,
  // ZooKeeper restarts session timers when a leader returns, so the session may live on:
  // asked again until ZooKeeper answers or the client closes.
  const Deadline until_closed(workers_->stop_token());
  try {
    return queue_.find(send_prefix(tag), until_closed);
  } catch (const Timeout&) {
    throw ConnectionLoss(
        "agent " + name_ + ": " +
        (until_closed.stop_requested() ? "the client closed" : "the reply deadline passed") +
        " while ZooKeeper was unreachable: whether send node " + send_path_prefix(tag) +
        "* exists is unknown (it goes with this client's session)");
  }
}

std::string AgentCore::create_send(const std::string& tag, Bytes data, std::int32_t head_version,
                                   const Deadline& deadline) {
  // Threads that send at once share one multi of creates: their nodes come out next to one
  // another in the queue, so their actions run in one batch. A send begun after another
  // returned goes in a later multi, so it still comes later in the queue.
  auto mine = std::make_shared<Creating>(
      Creating{tag, std::move(data), head_version, {}, {}, false, false, false});
  // A stop request wakes this thread's waits (made before the lock: it may run at once).
  std::stop_callback wake_on_stop(deadline.stop_token(), [this] {
    std::lock_guard lock(create_mutex_);
    created_.notify_all();
  });
  std::unique_lock lock(create_mutex_);
  to_create_.push_back(mine);
  while (!mine->done) {
    if (!mine->taken && !creating_) {
      create_next_group(lock, deadline);
      continue;
    }
    if (deadline.expired()) give_up_send(lock, mine, deadline);
    created_.wait_until(lock, deadline.time_or_far(), [&] {
      return mine->done || (!mine->taken && !creating_) || deadline.stop_requested();
    });
  }
  if (mine->error) std::rethrow_exception(mine->error);
  return mine->node;
}

void AgentCore::create_next_group(std::unique_lock<std::mutex>& lock, const Deadline& deadline) {
  creating_ = true;
  // Bounded like a batch, and by rule 11's size: the arguments of named sends count.
  const auto taken = to_create_.begin() + static_cast<std::ptrdiff_t>(sends_fitting_one_request());
  const Group group(to_create_.begin(), taken);
  to_create_.erase(to_create_.begin(), taken);
  for (const auto& one : group) one->taken = true;
  lock.unlock();
  create_together(group, deadline);  // settled, or handed to a worker when late
  lock.lock();
  creating_ = false;
  created_.notify_all();
}

void AgentCore::give_up_send(std::unique_lock<std::mutex>& lock,
                             const std::shared_ptr<Creating>& mine, const Deadline& deadline) {
  // Not sent yet: nothing to undo. Sent: whoever settles its create deletes the node.
  if (mine->taken)
    mine->abandoned = true;
  else
    std::erase(to_create_, mine);
  const bool sent = mine->taken;
  lock.unlock();
  // A named send's node may already be there, and any process that defined the name (this
  // one too: it is in no pending_) may run it before the delete: Timeout would promise too
  // much. A closure's node only its sender runs, from pending_: never.
  if (sent && is_named_tag(mine->tag)) {
    throw OutcomeUnknown("agent " + name_ + ": send: " +
                         (deadline.stop_requested() ? "cancelled" : "deadline passed") +
                         " after its create went out: the named action may run once "
                         "(its node, if made, is deleted in the background)");
  }
  deadline.expire("agent " + name_ + ": send");
}

void AgentCore::create_together(const Group& group, const Deadline& deadline) {
  CreateReply reply;
  if (group.size() == 1) {
    // A lone send's create as a future: a sender whose deadline passes hands it to a worker.
    const auto made = queue_.create_op(send_prefix(group.front()->tag), group.front()->data);
    auto created = session_.create_async(made.path, made.data, made.mode).share();
    reply = [this, created](const Deadline& by) -> std::optional<std::vector<std::string>> {
      auto path = session_.wait(created, by);
      if (!path) return std::nullopt;
      return std::vector<std::string>{std::move(*path)};
    };
  } else {
    std::vector<Operation> operations;
    for (const auto& one : group) {
      operations.push_back(queue_.create_op(send_prefix(one->tag), one->data));
    }
    auto committed = session_.multi_async(operations).share();
    reply = [this, committed,
             operations](const Deadline& by) -> std::optional<std::vector<std::string>> {
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
    workers_->post(true,
                   [self = shared_from_this(), node = *node] { self->remove_abandoned(node); });
  }
}

bool AgentCore::gave_up(const Creating& one) {
  std::lock_guard lock(create_mutex_);
  return one.abandoned;
}

void AgentCore::remove_abandoned(const std::string& node) {
  // Until ZooKeeper says the node is gone, never from silence alone (item 6 of issue 35): a
  // session unreachable for three timeouts may live on, its orphan blocking the queue.
  const Deadline until_closed(workers_->stop_token());  // then it goes with the session
  for (std::size_t attempt = 0;; ++attempt) {
    try {
      // Deleted, gone already (or with its session), or the client closed: done.
      (void)queue_.release(node, 0, until_closed);  // send nodes never change: version 0
      return;
    } catch (const ConnectionLoss&) {
    }
    if (!back_off(attempt, until_closed, outage_pauses)) return;
  }
}

std::optional<std::string> AgentCore::create_again(const Creating& one) {
  // The engine finds a create whose reply was lost before it creates again; the gate stops
  // it from creating what may have run already.
  bool gave_up_on = false;
  bool maybe_run = false;
  bool sent = false;  // a create went out
  const auto may_create = [&] {
    gave_up_on = gave_up(one);  // its sender timed out: make nothing more
    maybe_run = !gave_up_on && named_send_may_have_run(one);
    sent = sent || (!gave_up_on && !maybe_run);
    return !gave_up_on && !maybe_run;
  };
  if (auto made = queue_.create(send_prefix(one.tag), one.data,
                                Deadline::at(resolution_deadline(session_)), may_create)) {
    return made;
  }
  if (gave_up_on) return std::nullopt;
  if (maybe_run) {
    throw OutcomeUnknown("agent " + name_ +
                         ": send: ZooKeeper lost the reply to the create "
                         "of a named send and its node is gone: another process may have "
                         "run it (it ran once or not at all; not sent again)");
  }
  // The deadline passed, a create perhaps landed: found, or known absent, before giving up.
  if (sent) {
    if (auto found = locate_send(one.tag)) return found;
  }
  throw ConnectionLoss("agent " + name_ + ": ZooKeeper unreachable, send not made (no node " +
                       send_path_prefix(one.tag) + "* left behind)");
}

bool AgentCore::named_send_may_have_run(const Creating& one) {
  // A named send's node may have landed and been run and deleted by a process that defined
  // the name (this one included) before it could be found: "not found" does not mean "not
  // sent", and creating it again could run it twice, unless no batch committed since the
  // send was made (a batch that runs a send moves the head). A closure's node only this
  // process runs, from pending_, where it is not yet: one not found never ran.
  if (!is_named_tag(one.tag)) return false;
  // After the sync the head is at least as new as any batch that ran the send. No answer
  // (ConnectionLoss, SessionExpired): the engine asks again after a pause.
  auto synced = session_.sync_async(head_path_);
  auto read = session_.get_async(head_path_);
  session_.wait(synced);
  return session_.wait(read).stat.version != one.head_version;
}

bool AgentCore::watch_predecessor(const std::vector<std::string>& queue, const std::string& own) {
  // A waiter watches the one send before its own (a mutex's rule): no herd when one finishes.
  std::weak_ptr<AgentCore> weak = weak_from_this();
  auto wake = [weak](const WatchEvent& event) {
    auto self = weak.lock();
    if (!self) return;
    if (event.type == WatchEventType::deleted) {
      std::lock_guard lock(self->mutex_);
      std::erase(self->known_queue_, name_of(event.path));
    }
    self->kick();
  };
  const auto turn = queue_.turn_in(queue, own, HoldRule::first(1), std::move(wake), Deadline{});
  if (!turn) ReplyDeadline::current().expire("agent " + name_ + ": watching a send ahead");
  return !turn->watch.empty();  // empty: the one ahead is gone already (or none is)
}

std::vector<std::string> AgentCore::list_queue() {
  // Every send made before the listing is asked for is in it unless it is gone: so is every
  // send of a lower sequence, made before one of those.
  std::optional<std::int32_t> made_before;
  {
    std::lock_guard lock(mutex_);
    if (!pending_.empty()) made_before = pending_.rbegin()->first;
  }
  // Only send nodes (the queue of an agent named /x also holds the folder of /x/y), listed
  // without a sync: this session's own sends are all a listing must hold (its sends made
  // before it, for gone_from), and others' a watch or the next listing brings.
  auto children = queue_.list(Deadline{}, {}, Freshness::own_writes);
  if (!children) ReplyDeadline::current().expire("agent " + name_ + ": listing its queue");
  std::lock_guard lock(mutex_);
  known_queue_ = *children;
  listed_up_to_ = made_before;
  return std::move(*children);
}

std::vector<std::string> AgentCore::gone_from(const std::vector<std::string>& listing) {
  const std::unordered_set<std::string> listed(listing.begin(), listing.end());
  std::vector<std::string> gone;
  std::lock_guard lock(mutex_);
  for (const auto& [sequence, pending] : pending_) {
    if (!listed_up_to_ || SequenceOrder{}(*listed_up_to_, sequence)) break;
    if (!listed.contains(name_of(pending.node))) gone.push_back(pending.node);
  }
  return gone;
}

}  // namespace avout::detail
