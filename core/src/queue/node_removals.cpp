// NodeRemovals: its worker thread, which sends what is queued in rounds until each node is gone.
#include "queue/node_removals.hpp"
#include "base/back_off.hpp"
#include "queue/sequential_queue.hpp"
#include "zk/outcome.hpp"

#include <avout/errors.hpp>

#include <future>

namespace avout::detail {

namespace {

// A failed round waits for the session to reconnect, or for a pause growing from 50 ms to a
// second (a reply lost while the connection stayed up brings no session event).
constexpr BackOff retry_pauses{std::chrono::milliseconds(50), std::chrono::seconds(1)};
// How often a wait for replies looks whether stop() was called.
constexpr std::chrono::milliseconds stop_check{50};

}  // namespace

NodeRemovals::NodeRemovals(ZooKeeperSession& session) : session_(session) {}

NodeRemovals::~NodeRemovals() { stop(); }

void NodeRemovals::post(std::string node, std::uint64_t generation) {
  enqueue({std::move(node), generation});
}

void NodeRemovals::post_created(std::string folder, std::string prefix, std::uint64_t generation) {
  enqueue({std::move(folder), generation, std::move(prefix)});
}

bool NodeRemovals::remove_now(SequentialQueue& queue, const std::string& path,
                              std::uint64_t generation, const Deadline& bound) noexcept {
  try {
    const ReplyDeadline replies(bound);
    if (queue.release(path, 0, bound).has_value()) return true;  // deleted, or gone already
  } catch (const Error&) {
  }
  post(path, generation);
  return false;
}

bool NodeRemovals::remove_created_now(SequentialQueue& queue, const std::string& prefix,
                                      std::uint64_t generation, const Deadline& bound) noexcept {
  std::optional<std::string> node;
  try {
    const ReplyDeadline replies(bound);
    node = queue.find(prefix, bound);
  } catch (const Error&) {  // unknown still: the worker looks again until it is known
    post_created(queue.folder(), prefix, generation);
    return false;
  }
  return !node || remove_now(queue, *node, generation, bound);
}

void NodeRemovals::enqueue(Removal removal) {
  std::lock_guard lock(mutex_);
  if (stopping_) return;  // the session is closing: its close deletes the node
  queue_.push_back(std::move(removal));
  changed_.notify_all();
}

void NodeRemovals::start() {
  // Not from enqueue: posts come with a core's mutex held (a lock core's), which the core's own
  // session listener takes under the session's dispatch lock, and add_listener takes that lock.
  // After remove_listener returns the listener never runs again, so it may use `this`.
  std::call_once(started_, [this] {
    listener_ = session_.add_listener([this](SessionState state) {
      if (state != SessionState::connected) return;
      std::lock_guard guard(mutex_);
      ++reconnects_;
      changed_.notify_all();
    });
    worker_ = std::thread([this] { work(); });
  });
}

void NodeRemovals::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    stop_.request_stop();
    queue_.clear();
    changed_.notify_all();
  }
  if (listener_ != 0) session_.remove_listener(listener_);
  if (worker_.joinable()) worker_.join();
}

void NodeRemovals::work() {
  std::unique_lock lock(mutex_);
  std::size_t attempt = 0;
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    auto round = std::move(queue_);
    queue_.clear();
    const auto reconnects = reconnects_;
    lock.unlock();
    auto left = remove(std::move(round));
    lock.lock();
    if (left.empty()) {
      attempt = 0;
      continue;
    }
    queue_.insert(queue_.end(), std::make_move_iterator(left.begin()),
                  std::make_move_iterator(left.end()));
    changed_.wait_for(lock, back_off_pause(attempt++, retry_pauses),
                      [&] { return stopping_ || reconnects_ != reconnects; });
  }
}

bool NodeRemovals::arrived(const std::future<void>& reply,
                           std::chrono::steady_clock::time_point give_up_at) {
  // The C client reports a dead connection within the session timeout; stop() does not
  // wait for it.
  while (reply.wait_for(stop_check) != std::future_status::ready) {
    std::lock_guard lock(mutex_);
    if (stopping_ || std::chrono::steady_clock::now() >= give_up_at) return false;
  }
  return true;
}

std::vector<NodeRemovals::Removal> NodeRemovals::resolve(std::vector<Removal> removals,
                                                         std::vector<Removal>& left) {
  std::vector<Removal> nodes;
  // Given up at stop() too (a stop is noticed within 50 ms by the outcome module's waits).
  const Deadline give_up_at =
      Deadline::after(2 * session_.negotiated_timeout()).with_stop(stop_.get_token());
  for (auto& removal : removals) {
    if (removal.prefix.empty()) {
      nodes.push_back(std::move(removal));
      continue;
    }
    if (session_.ended_since(removal.generation)) continue;  // the node, if any, went with it
    try {
      // Read after a sync sent after the create on the same session: the listing shows it
      // if it landed, and a create lost with its connection never lands later.
      const auto found = child_outcome(session_, removal.node, removal.prefix, give_up_at,
                                       "node removals: looking for " + removal.prefix + "*");
      if (found) nodes.push_back({*found, removal.generation});
    } catch (const NoNode&) {
    } catch (const Error&) {
      left.push_back(std::move(removal));  // Timeout: look again next round
    }
  }
  return nodes;
}

std::vector<NodeRemovals::Removal> NodeRemovals::remove(std::vector<Removal> removals) {
  std::vector<Removal> left;
  std::vector<std::pair<Removal, std::future<void>>> sent;
  for (auto& removal : resolve(std::move(removals), left)) {
    // Once the session ended (ZooKeeper said so), its ephemeral nodes are gone.
    if (session_.ended_since(removal.generation)) continue;
    try {
      // Queue nodes are never changed: version 0.
      auto reply = session_.remove_async(removal.node, 0);
      sent.emplace_back(std::move(removal), std::move(reply));
    } catch (const Error&) {
      left.push_back(std::move(removal));
    }
  }
  const auto give_up_at = std::chrono::steady_clock::now() + 2 * session_.negotiated_timeout();
  for (auto& [removal, reply] : sent) {
    if (!arrived(reply, give_up_at)) {
      left.push_back(std::move(removal));
      continue;
    }
    try {
      reply.get();
    } catch (const NoNode&) {
    } catch (const SessionExpired&) {
    } catch (const ConnectionLoss&) {
      left.push_back(std::move(removal));
    } catch (const Error&) {
      // Refused for good (the node's ACL, a node that gained children): no retry helps.
    }
  }
  return left;
}

}  // namespace avout::detail
