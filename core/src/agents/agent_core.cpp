#include "agents/agent_core.hpp"
#include "agents/agent_workers.hpp"
#include "base/back_off.hpp"
#include "base/log.hpp"
#include "zk/multi_size.hpp"
#include "runtime/node_cache.hpp"
#include "runtime/pending_markers.hpp"
#include "runtime/runtime.hpp"
#include "runtime/marked_commit.hpp"
#include "stm/participant.hpp"
#include "records/wire.hpp"
#include "runtime/zookeeper_held_values.hpp"

#include <avout/codec.hpp>
#include <avout/errors.hpp>

#include <algorithm>
#include <stop_token>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>

namespace avout::detail {

namespace {

constexpr std::uint8_t agent_head_format = 1;

// The most actions one commit applies: a batch holds the queue for its run, and one whose
// outcome is in doubt runs again whole.
constexpr std::size_t max_batch = 512;

// Sends made by the action running on this thread: they go out once its value is stored.
thread_local std::vector<std::function<void()>>* sends_of_running_action = nullptr;

// The sequence number ZooKeeper appended to a send node's name, "s-<tag>-<sequence>"
// (sequence.hpp: it wraps, so it orders only through SequenceOrder).
std::optional<std::int32_t> sequence_of(std::string_view name) { return sequence_after_dash(name); }

std::string last_segment(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// Send nodes of this process are gone: run by another process, or gone with its session.
struct SendVanished {
  std::vector<std::string> nodes;  // the oldest pending send's among them
};

constexpr std::uint8_t named_send_format = 1;

// A named send's node name: "s-n<uuid>-<sequence>" (a closure's tag is a bare uuid).
bool is_named_send(const std::string& segment) { return segment.rfind("s-n", 0) == 0; }

// A named send's tag ("n<uuid>"): another process may run its node as soon as it exists.
bool is_named_tag(const std::string& tag) { return tag.rfind('n', 0) == 0; }

}  // namespace

Bytes encode_agent_head(const AgentHead& head) {
  WireWriter out;
  out.u8(agent_head_format);
  out.text(head.point.id);
  out.u8(head.error ? 1 : 0);
  if (head.error) out.text(*head.error);
  return out.take();
}

AgentHead decode_agent_head(const Bytes& bytes, const std::string& path) {
  WireReader in(bytes, "agent head " + path);
  if (in.u8() != agent_head_format) in.fail("unknown format");
  AgentHead head;
  head.point.id = in.text();
  const auto failed = in.u8();
  if (failed > 1) in.fail("error flag");
  if (failed == 1) head.error = in.text();
  if (!in.done()) in.fail("trailing bytes");
  return head;
}

AgentCore::AgentCore(std::string name, std::shared_ptr<ReferenceData> data,
                     std::size_t max_value_size, Runtime& runtime,
                     std::shared_ptr<AgentWorkers> workers)
    : name_(std::move(name)),
      data_(std::move(data)),
      max_value_size_(max_value_size),
      runtime_(runtime),
      session_(runtime.session()),
      workers_(std::move(workers)),
      head_path_(runtime.layout().agent_head(name_)),
      queue_path_(runtime.layout().agent_queue(name_)) {}

AgentCore::~AgentCore() = default;

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


Deadline AgentCore::default_deadline() const {
  const auto& timeout = runtime_.options().operation_timeout;
  return timeout ? Deadline::after(*timeout) : Deadline{};
}

void AgentCore::define(const std::string& name, NamedAgentAction action) {
  std::lock_guard lock(named_mutex_);
  named_[name] = std::make_shared<const NamedAgentAction>(std::move(action));
}

void AgentCore::send_named(const std::string& name, Bytes arguments, bool blocking,
                           const Deadline& deadline) {
  std::shared_ptr<const NamedAgentAction> named;
  {
    std::lock_guard lock(named_mutex_);
    if (auto found = named_.find(name); found != named_.end()) named = found->second;
  }
  if (!named) {
    throw UndefinedAction("agent " + name_ + ": send: no action named '" + name +
                          "' is defined by this handle (Agent::define; each handle has its own)");
  }
  try {
    named->check(arguments);
  } catch (const CodecError& error) {
    throw CodecError("agent " + name_ + ": send of action '" + name + "': " + error.what());
  }
  WireWriter node;
  node.u8(named_send_format);
  node.u8(blocking ? 1 : 0);
  node.text(name);
  node.raw(arguments);
  submit([named, arguments](const Bytes& value) { return named->run(value, arguments); },
         node.take(), blocking, deadline);
}

void AgentCore::send(AgentAction action, bool blocking, const Deadline& deadline) {
  submit(std::move(action), std::nullopt, blocking, deadline);
}

void AgentCore::submit(AgentAction action, std::optional<Bytes> named, bool blocking,
                       const Deadline& deadline) {
  // Inside dosync or an action the send is part of that commit: no deadline of its own.
  const Deadline bound =
      OpenTransaction::current() != nullptr || in_action() ? Deadline{} : deadline;
  const std::string what = "agent " + name_ + ": send";
  if (bound.expired()) bound.expire(what);
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
  auto self = shared_from_this();
  if (auto* transaction = OpenTransaction::current()) {
    // Sent only if, and once, the transaction commits: a create inside its commit multi.
    auto in_doubt = std::make_shared<SendInDoubt>(
        self, tag, std::make_shared<AgentAction>(std::move(action)), blocking, is_named,
        generation);
    transaction->add_to_commit(
        {op::Create{send_prefix(tag), std::move(data), CreateMode::ephemeral_sequential}},
        [in_doubt](const std::vector<OperationResult>& results) {
          in_doubt->landed = true;
          if (results.empty()) return;  // the reply was lost: found in the background
          in_doubt->settled = true;
          in_doubt->agent->enqueue(results.front().created_path, std::move(*in_doubt->action),
                                   in_doubt->blocking, in_doubt->named, in_doubt->generation);
        });
    return;
  }
  // The send waits for its node: once send() returns its place in the global order is fixed,
  // so a send that returned before another began runs first.
  // A send made by an action is made again when its create failed: the data is copied, and
  // the action moved only once the node is made.
  auto go = [self, tag, data = std::move(data), action = std::move(action), blocking, bound,
             is_named, generation, head_version]() mutable {
    auto node = self->create_send(tag, data, head_version, bound);
    self->enqueue(std::move(node), std::move(action), blocking, is_named, generation);
  };
  if (sends_of_running_action != nullptr) {
    sends_of_running_action->push_back(std::move(go));  // after the action's value is stored
  } else {
    go();
  }
}

void AgentCore::enqueue(std::string node, AgentAction action, bool blocking, bool named,
                        std::uint64_t generation, std::optional<std::uint64_t> ticket) {
  bool first = false;
  {
    std::lock_guard lock(mutex_);
    if (!ticket) {
      ticket = ++tickets_;
      unfinished_.insert(*ticket);
    }
    // Kept alive by the workers while sends are queued, even when every handle is gone.
    if (pending_.empty()) workers_->retain(shared_from_this());
    const std::int32_t sequence = sequence_of(last_segment(node)).value();
    auto placed =
        pending_.emplace(sequence, Pending{std::move(node), std::move(action), blocking, {},
                                           named, generation, *ticket});
    first = placed.first == pending_.begin();
  }
  // A send that goes before the one being waited for must be looked at now; one behind it
  // is reached once those before it finish.
  if (first) kick();
}

std::map<std::int32_t, AgentCore::Pending, SequenceOrder>::iterator AgentCore::find_pending(
    const std::string& node) {
  const auto sequence = sequence_of(last_segment(node));
  return sequence ? pending_.find(*sequence) : pending_.end();
}

std::size_t AgentCore::erase_pending(const std::string& node) {
  const auto pending = find_pending(node);
  if (pending == pending_.end()) return 0;
  unfinished_.erase(pending->second.ticket);
  pending_.erase(pending);
  return 1;
}

AgentCore::SendInDoubt::~SendInDoubt() {
  // The commit's reply was lost, or the dosync ended in OutcomeUnknown (or failed: then
  // nothing is found): a node that landed must run here, its closure's only runner, or it
  // would hold the queue for every process while this session lives.
  if (settled || !agent) return;
  std::optional<std::uint64_t> ticket;
  if (landed) ticket = agent->note_sent();  // await waits for it from now
  try {
    agent->workers_->post(true, [agent = agent, tag = tag, action = action, blocking = blocking,
                                 named = named, generation = generation, ticket] {
      std::optional<std::string> found;
      try {
        found = agent->locate_send(tag);
      } catch (const Error&) {
      }
      if (found) agent->enqueue(*found, std::move(*action), blocking, named, generation, ticket);
      else if (ticket) agent->count_dropped(ticket);
    });
  } catch (...) {
    // Workers stopped: the node goes with this client's session.
    if (ticket) agent->count_dropped(ticket);
  }
}

std::uint64_t AgentCore::note_sent() {
  std::lock_guard lock(mutex_);
  unfinished_.insert(++tickets_);
  return tickets_;
}

void AgentCore::count_dropped(std::optional<std::uint64_t> ticket) {
  std::lock_guard lock(mutex_);
  if (ticket) unfinished_.erase(*ticket);
  ++dropped_;
  idle_.notify_all();
}

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
  {
    std::lock_guard lock(mutex_);
    // Only this process's sends count; a batch also deletes other processes' named sends.
    std::size_t ours = 0;
    for (const auto& node : nodes) ours += erase_pending(node);
    if (dropped) dropped_ += ours;
    retry_delay_ = std::chrono::milliseconds(0);
    idle = ours > 0 && pending_.empty();
    idle_.notify_all();
  }
  if (idle) workers_->release(this);
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
      ours = pending != pending_.end() && last_segment(pending->second.node) == node;
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
      WireReader in(data, "agent send " + queue_path_ + "/" + node);
      if (in.u8() != named_send_format) in.fail("unknown format");
      const auto blocking = in.u8();
      if (blocking > 1) in.fail("blocking flag");
      std::string action = in.text();
      send = NamedSend{std::move(action), in.rest(), blocking == 1};
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
  std::shared_ptr<const NamedAgentAction> named;
  {
    std::lock_guard lock(named_mutex_);
    const auto defined = named_.find(known->second->action);
    if (defined == named_.end()) return std::nullopt;
    named = defined->second;
  }
  return [named, arguments = known->second->arguments](const Bytes& value) {
    return named->run(value, arguments);
  };
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

std::vector<AgentCore::Runnable> AgentCore::plan(Pending& front) {
  const std::string own = last_segment(front.node);
  const std::size_t chroot = session_.options().chroot.size();
  const std::size_t fixed = fixed_multi_bytes();
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
    const auto mine = std::find(queue.begin(), queue.end(), own);
    if (mine == queue.end()) {
      if (listed) throw SendVanished{gone_from(queue)};
      queue = list_queue();
      listed = true;
      continue;
    }
    if (mine != queue.begin()) {
      // The sender of the first send drives: it runs the named sends behind its own, ours
      // among them, so racing it for the same run would only cost failed multis.
      if (!watch_until_gone(*std::prev(mine))) return {};  // the watch brings us back
      queue = list_queue();
      listed = true;
      continue;
    }
    learn_named_sends(queue);
    std::vector<Runnable> batch;
    {
      // The first in the queue on: ours and the runnable sends behind it, as long as they
      // follow one another; a send this process cannot run must see the value before it.
      std::size_t bytes = fixed;
      bool more_of_ours = false;
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
      for (++at, ++next; at != queue.end(); ++at) {
        if (next != pending_.end() && last_segment(next->second.node) == *at) {
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
      more_of_ours = at == queue.end() && next != pending_.end() &&
                     next->second.blocking == front.blocking && batch.size() < max_batch;
      if (listed || !more_of_ours) return batch;
    }
    queue = list_queue();
    listed = true;
  }
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
    Pending* front = nullptr;
    {
      std::unique_lock lock(mutex_);
      again_ = false;
      if (pending_.empty()) {
        running_ = false;
        return;
      }
      front = &pending_.begin()->second;  // only this worker erases; map nodes stay put
      if (front->blocking != pool) {
        running_ = false;
        lock.unlock();
        return kick();  // on the pool the oldest send asked for
      }
    }
    Step result = Step::retry_later;
    std::vector<std::string> done;  // the send nodes a finished step deleted
    try {
      result = step(*front, done);
    } catch (const SendVanished& vanished) {
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
      result = Step::dropped;  // `done` holds the dropped ones, if any
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
    if (result == Step::retry_later) {
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
      return kick();  // let other tasks of the pool run in between
    }
    std::lock_guard lock(mutex_);
    if (!again_) {
      running_ = false;
      return;  // the watch on the predecessor brings us back
    }
  }
}

AgentCore::Step AgentCore::step(Pending& front, std::vector<std::string>& done) {
  if (front.in_doubt) {
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
      named = doubt.written && decode_agent_head(session_.wait(head).data, head_path_).point == *doubt.written;
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
  }
  auto batch = plan(front);
  if (batch.empty()) return Step::waiting;
  return apply(std::move(batch), front, done);
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

void AgentCore::complete(InDoubt& landed) {
  {
    std::lock_guard lock(mutex_);
    for (const auto& node : landed.nodes) std::erase(known_queue_, last_segment(node));
  }
  if (landed.written && !landed.in_multi) erase_quietly(landed.previous);
  runtime_.nodes().refresh(head_path_);
  if (landed.unrun > 0) {
    std::lock_guard lock(mutex_);  // before finish() counts them done: await sees both
    unrun_ += landed.unrun;
    unrun_error_ = landed.error;
  }
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
          "agent " + name_ + ": a send made by an action was dropped (client closing): " +
              error.what());
    } catch (const std::exception& error) {
      log(workers_->logger(), LogLevel::error,
          "agent " + name_ + ": a send made by an action was dropped: " + error.what());
    }
    count_dropped();  // await reports it
    return;
  }
}

AgentCore::Step AgentCore::apply(std::vector<Runnable> batch, Pending& front,
                                 std::vector<std::string>& done) {
  // Rule 2: the commit goes out on the session its value is written for, or not at all.
  const std::uint64_t generation = session_.generation();
  auto lookup = runtime_.nodes().begin(head_path_);  // read ahead after our last commit
  auto head_node = runtime_.nodes().finish(lookup);
  auto head = decode_agent_head(head_node.data, head_path_);
  InDoubt commit{runtime_.layout().marker(runtime_.new_point().id), head.point, std::nullopt, false, {}, {}, 0, {}};
  std::vector<Operation> operations;
  std::vector<Operation> value_operations;  // a ZooKeeper-held value's, for the multi
  operations.push_back(op::Create{commit.marker, {}, CreateMode::persistent});
  // Our sends the batch drops unrun from `first`: await reports them (with the error).
  auto drop_unrun = [&](std::size_t first, const std::string& error) {
    for (std::size_t i = first; i < batch.size(); ++i) commit.unrun += batch[i].own != nullptr;
    if (commit.unrun > 0) commit.error = error;
  };
  if (head.error) {
    // A failed agent drops the actions still queued; only restart brings it back.
    operations.push_back(op::Check{head_path_, head_node.stat.version});
    drop_unrun(0, *head.error);
  } else {
    auto current = runtime_.fetch_value(*data_, head.point);
    if (!current && session_.get(head_path_).stat.version != head_node.stat.version) {
      // Another process's batch moved the head and erased the value it replaced.
      std::lock_guard lock(mutex_);
      known_queue_.clear();
      return Step::again;
    }
    if (!current) {
      throw BackendError("agent " + name_ + ": its value (point " + head.point.id +
                         ") is missing from its store");
    }
    // Each action sees the value the one before it left; only the last is stored. The
    // first that fails stops the batch: the head keeps the value before it, with its
    // error, and the sends behind it are deleted unrun, as a failed agent drops them.
    AgentHead next_head{head.point, std::nullopt};
    Bytes value = std::move(*current);
    bool changed = false;
    std::size_t ran = 0;  // the actions run, the failed one included
    for (const Runnable& each : batch) {
      ++ran;
      std::vector<std::function<void()>> sends;
      Bytes next;
      sends_of_running_action = &sends;
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
      if (next_head.error) {
        drop_unrun(ran, *next_head.error);
        break;  // a failed action's sends never go out (as in Clojure)
      }
      value = std::move(next);
      changed = true;
      for (auto& go : sends) commit.later_sends.push_back(std::move(go));
    }
    if (changed) {
      runtime_.announce_session();
      commit.written = runtime_.new_point();
      value_operations = held_value_operations(value, *commit.written, head.point, batch);
      commit.in_multi = !value_operations.empty();
      if (!commit.in_multi) data_->set(value, *commit.written);
      runtime_.remember(*commit.written, value);
      next_head.point = *commit.written;
    }
    operations.push_back(
        op::SetData{head_path_, encode_agent_head(next_head), head_node.stat.version});
  }
  for (const Runnable& each : batch) {
    operations.push_back(op::Remove{each.node, 0});
    commit.nodes.push_back(each.node);
  }
  // The new value's create, then the replaced value's removal: clean-up, which a removal
  // that finds its node gone already must not fail.
  const std::size_t cleanup = value_operations.empty() ? 0 : 1;
  for (auto& operation : value_operations) operations.push_back(std::move(operation));

  MultiResult result;
  // Markers it carries stay waiting while its outcome is in doubt: one a later commit finds
  // gone is dropped then. A lost reply landed when the head names the value (rule 6: gc may
  // have removed the marker by the time it is asked for).
  std::optional<bool> landed;
  try {
    landed = runtime_.markers().commit(operations, commit.marker, &result, cleanup,
                                       [&] { return head_names(commit.written); }, generation);
  } catch (const SessionExpired&) {
    // Renewed before the multi went out: nothing was sent, and the batch's own send node went
    // with the old session. Its value is unreferenced; the next plan settles the sends.
    if (commit.written && !commit.in_multi) erase_quietly(*commit.written);
    std::lock_guard lock(mutex_);
    known_queue_.clear();
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
  std::lock_guard lock(mutex_);
  known_queue_.clear();
  return Step::again;
}

std::vector<Operation> AgentCore::held_value_operations(const Bytes& value, const Point& point,
                                                      const Point& previous,
                                                      const std::vector<Runnable>& batch) const {
  auto create = commit_operation(*data_, value, point);
  if (!create) return {};
  const std::size_t chroot = session_.options().chroot.size();
  auto remove = op::Remove{commit_operation(*data_, {}, previous)->path, 0};
  std::size_t bytes = fixed_multi_bytes() + serialized_size(*create, chroot) +
                      serialized_size(remove, chroot);
  for (const Runnable& each : batch) bytes += serialized_size(op::Remove{each.node, 0}, chroot);
  if (bytes > multi_limit) return {};  // rule 11: the value goes to the store before the multi
  return {std::move(*create), std::move(remove)};
}

bool AgentCore::await_until(const Deadline& deadline) {
  if (in_action()) throw Error("agent " + name_ + ": await inside an agent action");
  if (OpenTransaction::current() != nullptr) throw Error("agent " + name_ + ": await inside dosync");
  // A stop request wakes the wait (made before the lock: it may run at once).
  std::stop_callback wake_on_stop(deadline.stop_token(), [this] {
    std::lock_guard lock(mutex_);
    idle_.notify_all();
  });
  std::unique_lock lock(mutex_);
  // Taken once: sends other threads make while this one waits are not waited for.
  const std::uint64_t target = tickets_;
  auto done = [&] { return unfinished_.empty() || *unfinished_.begin() > target; };
  idle_.wait_until(lock, deadline.time_or_far(), [&] { return done() || deadline.stop_requested(); });
  if (!done()) return false;
  if (const auto dropped = std::exchange(dropped_, 0); dropped > 0) {
    throw SessionExpired("agent " + name_ + ": " + std::to_string(dropped) +
                         " action(s) sent by this process were dropped: their send nodes "
                         "vanished with an expired ZooKeeper session, or (made by an action) "
                         "could not be created (see the log)");
  }
  if (const auto unrun = std::exchange(unrun_, 0); unrun > 0) {
    throw AgentFailed("agent " + name_ + " failed (" + unrun_error_ + "): " +
                      std::to_string(unrun) + " action(s) sent by this process were dropped "
                      "unrun; restart it first");
  }
  return true;
}

std::optional<std::string> AgentCore::error() {
  return decode_agent_head(session_.get(head_path_).data, head_path_).error;
}

void AgentCore::restart(const Bytes& value) {
  require_fits(value.size(), max_value_size_, "agent " + name_);
  if (!accepts(value)) throw ValidationError("agent " + name_ + ": the validator rejected the value");
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
      landed = runtime_.markers().commit(operations, marker, nullptr, 0,
                                         [&] { return head_names(point); }, generation);
    } catch (const SessionExpired&) {
      erase_quietly(point);  // renewed before the multi went out: nothing was sent
      continue;
    }
    if (!landed) {
      // The new point may be referenced: it stays for gc to judge, like the marker.
      throw OutcomeUnknown("agent " + name_ + ": restart: outcome unknown (ZooKeeper "
                           "unreachable); marker " + marker);
    }
    if (*landed) {
      data_->erase(head.point);
      return;
    }
    data_->erase(point);
  }
  throw RetryLimitExceeded("agent " + name_ + ": restart kept conflicting");
}

void AgentCore::set_validator(std::function<bool(const Bytes&)> validator) {
  std::lock_guard lock(mutex_);
  validator_ = std::move(validator);
}

bool AgentCore::accepts(const Bytes& value) {
  std::function<bool(const Bytes&)> validator;
  {
    std::lock_guard lock(mutex_);
    validator = validator_;
  }
  return !validator || validator(value);
}

}  // namespace avout::detail
