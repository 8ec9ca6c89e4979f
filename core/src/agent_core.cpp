#include "agent_workers.hpp"
#include "node_cache.hpp"
#include "wire.hpp"

#include <avout/detail/agent_core.hpp>
#include <avout/detail/stm.hpp>
#include <avout/errors.hpp>

#include <algorithm>
#include <cstdio>
#include <thread>

namespace avout::detail {

namespace {

constexpr std::uint8_t agent_head_format = 1;

// Sends made by the action running on this thread: they go out once its value is stored.
thread_local std::vector<std::function<void()>>* sends_of_running_action = nullptr;

// The sequence number ZooKeeper appended to a sequential node's name (its last 10 digits).
std::string_view sequence_of(const std::string& name) {
  return std::string_view(name).substr(name.size() >= 10 ? name.size() - 10 : 0);
}

std::string last_segment(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// This process's send node is gone (its session expired): the send is dropped.
struct SendVanished {};

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
                     std::size_t max_value_size, StmContext& stm,
                     std::shared_ptr<AgentWorkers> workers)
    : name_(std::move(name)),
      data_(std::move(data)),
      max_value_size_(max_value_size),
      stm_(stm),
      session_(stm.session()),
      workers_(std::move(workers)),
      head_path_(stm.agent_path("heads", name_)),
      queue_path_(stm.agent_path("queues", name_)) {}

AgentCore::~AgentCore() = default;

bool AgentCore::in_action() { return sends_of_running_action != nullptr; }

void AgentCore::create_if_absent(const Bytes& initial) {
  if (session_.exists(head_path_)) return;
  require_fits(initial.size(), max_value_size_, "agent " + name_);
  session_.create_recursive(head_path_.substr(0, head_path_.rfind('/')));
  session_.create_recursive(queue_path_);
  stm_.announce_session();
  const Point point = stm_.new_point();
  data_->set(initial, point);
  try {
    session_.create(head_path_, encode_agent_head(AgentHead{point, std::nullopt}));
  } catch (const NodeExists&) {
    data_->erase(point);  // another process made the agent first
  }
}

Bytes AgentCore::read_latest() {
  auto head = decode_agent_head(session_.get(head_path_).data, head_path_);
  auto value = stm_.fetch_value(*data_, head.point);
  if (!value) {
    throw BackendError("agent " + name_ + ": its value (point " + head.point.id +
                       ") is missing from its store");
  }
  return *value;
}

std::string AgentCore::send_prefix(const std::string& tag) const {
  return queue_path_ + "/s-" + tag + "-";
}

std::optional<std::string> AgentCore::find_send(const std::string& tag) {
  for (const auto& child : session_.children(queue_path_)) {
    if (child.rfind("s-" + tag + "-", 0) == 0) return queue_path_ + "/" + child;
  }
  return std::nullopt;
}

void AgentCore::send(AgentAction action, bool blocking) {
  // A failed agent refuses sends until restart (its head is usually cached: no round trip).
  auto lookup = stm_.nodes().begin(head_path_);
  auto head = decode_agent_head(stm_.nodes().finish(lookup).data, head_path_);
  if (head.error) {
    throw AgentFailed("agent " + name_ + " failed (" + *head.error + "); restart it first");
  }
  const std::string tag = stm_.new_point().id;
  auto self = shared_from_this();
  if (auto* transaction = Transaction::current()) {
    // Sent only if, and once, the transaction commits: a create inside its commit multi.
    auto shared_action = std::make_shared<AgentAction>(std::move(action));
    transaction->add_to_commit(
        {op::Create{send_prefix(tag), {}, CreateMode::ephemeral_sequential}},
        [self, tag, shared_action, blocking](const std::vector<OperationResult>& results) {
          std::promise<std::string> created;
          if (!results.empty()) {
            created.set_value(results.front().created_path);
          } else if (auto found = self->find_send(tag)) {  // the commit's reply was lost
            created.set_value(*found);
          } else {
            created.set_exception(std::make_exception_ptr(SendVanished{}));
          }
          self->enqueue(Pending{created.get_future().share(), tag, std::move(*shared_action),
                                blocking});
        });
    return;
  }
  auto go = [self, tag, action = std::move(action), blocking]() mutable {
    // The send waits for its node (one round trip): once send() returns its place in the
    // global order is fixed, so a send that returned before another began runs first.
    auto created = self->session_.create_async(self->send_prefix(tag), {},
                                               CreateMode::ephemeral_sequential).share();
    (void)self->session_.wait(created);
    self->enqueue(Pending{created, tag, std::move(action), blocking});
  };
  if (sends_of_running_action != nullptr) {
    sends_of_running_action->push_back(std::move(go));  // after the action's value is stored
  } else {
    go();
  }
}

void AgentCore::enqueue(Pending pending) {
  const bool blocking = pending.blocking;
  bool start = false;
  {
    std::lock_guard lock(mutex_);
    ++sent_;
    pending_.push_back(std::move(pending));
    if (!driving_) {
      driving_ = true;
      start = true;
    }
  }
  if (start) {
    workers_->retain(shared_from_this());
    schedule(blocking);
  }
}

void AgentCore::schedule(bool blocking) {
  workers_->post(blocking, [self = shared_from_this(), blocking] {
    std::optional<bool> wrong_pool;
    {
      std::lock_guard lock(self->mutex_);
      if (!self->pending_.empty() && self->pending_.front().blocking != blocking) {
        wrong_pool = self->pending_.front().blocking;
      }
    }
    if (wrong_pool) return self->schedule(*wrong_pool);
    self->drive();
  });
}

void AgentCore::finish_one() {
  bool done = false;
  {
    std::lock_guard lock(mutex_);
    pending_.pop_front();
    ++finished_;
    if (pending_.empty()) {
      driving_ = false;
      done = true;
    }
    idle_.notify_all();
  }
  if (done) workers_->release(this);
}

bool AgentCore::first_in_queue(const std::string& node) {
  // Each waiter watches only the send just before its own: no herd when one finishes.
  const std::string own = last_segment(node);
  {
    // Sequence numbers only grow, so nothing can get in front of a node later: when every
    // node listed before ours is known to be gone, ours is first without asking again.
    std::lock_guard lock(mutex_);
    auto mine = std::find(known_queue_.begin(), known_queue_.end(), own);
    if (mine == known_queue_.begin() && mine != known_queue_.end()) return true;
  }
  while (true) {
    auto children = session_.children(queue_path_);
    std::sort(children.begin(), children.end(), [](const auto& a, const auto& b) {
      return sequence_of(a) < sequence_of(b);
    });
    {
      std::lock_guard lock(mutex_);
      known_queue_ = children;
    }
    auto mine = std::find(children.begin(), children.end(), own);
    if (mine == children.end()) throw SendVanished{};
    if (mine == children.begin()) return true;
    const std::string predecessor = queue_path_ + "/" + *std::prev(mine);
    std::weak_ptr<AgentCore> weak = weak_from_this();
    const bool blocking = [&] {
      std::lock_guard lock(mutex_);
      return pending_.front().blocking;
    }();
    auto still_there = session_.exists(
        predecessor, [weak, blocking, gone = *std::prev(mine)](const WatchEvent& event) {
          auto self = weak.lock();
          if (!self) return;
          if (event.type == WatchEventType::deleted) {
            std::lock_guard lock(self->mutex_);
            std::erase(self->known_queue_, gone);
          }
          self->schedule(blocking);
        });
    if (still_there) return false;  // the watch brings us back
  }
}

void AgentCore::drive() {
  while (true) {
    Pending* front = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (pending_.empty()) return;
      front = &pending_.front();  // only this driver pops; deque references stay valid
    }
    std::string node;
    try {
      node = session_.wait(front->created);
      if (!first_in_queue(node)) return;
      apply(node, *front);
    } catch (const SendVanished&) {
      // Our session expired with the send node: the action is dropped like a dead sender's,
      // and the queue goes on without it.
    } catch (const SessionExpired&) {
    } catch (const ConnectionLoss&) {
      // ZooKeeper unreachable: try again shortly rather than drop a send that may still be
      // queued.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      schedule(front->blocking);
      return;
    } catch (const std::exception& error) {
      // The store failed or the head is unreadable: drop this send so it cannot block the
      // queue of every process, and say so.
      std::fprintf(stderr, "avout: agent %s dropped an action: %s\n", name_.c_str(), error.what());
      if (!node.empty()) (void)session_.remove_async(node, -1);
    }
    finish_one();
  }
}

void AgentCore::apply(const std::string& node, Pending& pending) {
  for (std::size_t attempt = 0; attempt < stm_.options().retry_limit; ++attempt) {
    auto lookup = stm_.nodes().begin(head_path_);  // read ahead after our last action
    auto head_node = stm_.nodes().finish(lookup);
    auto head = decode_agent_head(head_node.data, head_path_);
    std::vector<Operation> operations;
    const std::string marker = stm_.marker_path(stm_.new_point().id);
    operations.push_back(op::Create{marker, {}, CreateMode::persistent});
    std::vector<std::function<void()>> later_sends;
    std::optional<Point> written;
    if (head.error) {
      // A failed agent drops the actions still queued; only restart brings it back.
      operations.push_back(op::Check{head_path_, head_node.stat.version});
    } else {
      auto current = stm_.fetch_value(*data_, head.point);
      if (!current) {
        throw BackendError("agent " + name_ + ": its value (point " + head.point.id +
                           ") is missing from its store");
      }
      AgentHead next_head{head.point, std::nullopt};
      Bytes next;
      sends_of_running_action = &later_sends;
      try {
        next = pending.action(*current);
        require_fits(next.size(), max_value_size_, "agent " + name_);
        if (!accepts(next)) next_head.error = "the validator rejected the new value";
      } catch (const std::exception& error) {
        next_head.error = error.what();
      } catch (...) {
        next_head.error = "a non-standard exception";
      }
      sends_of_running_action = nullptr;
      if (!next_head.error) {
        stm_.announce_session();
        written = stm_.new_point();
        data_->set(next, *written);
        stm_.remember(*written, next);
        next_head.point = *written;
      }
      operations.push_back(
          op::SetData{head_path_, encode_agent_head(next_head), head_node.stat.version});
    }
    operations.push_back(op::Remove{node, 0});

    const auto landed = commit_with_marker(session_, operations, marker);
    if (!landed) throw ConnectionLoss("agent " + name_ + ": outcome of an action unknown");
    if (*landed) {
      {
        std::lock_guard lock(mutex_);
        std::erase(known_queue_, last_segment(node));
      }
      (void)session_.remove_async(marker, 0);
      if (written) data_->erase(head.point);
      stm_.nodes().refresh(head_path_);
      for (auto& go : later_sends) go();
      return;
    }
    if (written) data_->erase(*written);
    if (!session_.exists(node)) throw SendVanished{};
    // The head moved (a restart): apply again to the new value.
  }
  throw RetryLimitExceeded("agent " + name_ + ": an action kept conflicting with restarts");
}

bool AgentCore::await_for(std::chrono::milliseconds timeout) {
  if (in_action()) throw Error("agent " + name_ + ": await inside an agent action");
  if (Transaction::current() != nullptr) throw Error("agent " + name_ + ": await inside dosync");
  std::unique_lock lock(mutex_);
  const std::uint64_t target = sent_;
  return idle_.wait_for(lock, timeout, [&] { return finished_ >= target; });
}

std::optional<std::string> AgentCore::error() {
  return decode_agent_head(session_.get(head_path_).data, head_path_).error;
}

void AgentCore::restart(const Bytes& value) {
  require_fits(value.size(), max_value_size_, "agent " + name_);
  if (!accepts(value)) throw ValidationError("agent " + name_ + ": the validator rejected the value");
  for (std::size_t attempt = 0; attempt < stm_.options().retry_limit; ++attempt) {
    auto head_node = session_.get(head_path_);
    auto head = decode_agent_head(head_node.data, head_path_);
    if (!head.error) throw Error("agent " + name_ + " has not failed: nothing to restart");
    stm_.announce_session();
    const Point point = stm_.new_point();
    data_->set(value, point);
    const std::string marker = stm_.marker_path(stm_.new_point().id);
    const std::vector<Operation> operations{
        op::Create{marker, {}, CreateMode::persistent},
        op::SetData{head_path_, encode_agent_head(AgentHead{point, std::nullopt}),
                    head_node.stat.version}};
    const auto landed = commit_with_marker(session_, operations, marker);
    if (!landed) throw ConnectionLoss("agent " + name_ + ": outcome of restart unknown");
    if (*landed) {
      (void)session_.remove_async(marker, 0);
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
