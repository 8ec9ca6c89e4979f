// Making, waiting on and removing a lock's nodes: the engine's protected create, the waits
// a watch or a session change ends, and the removals of nodes given up or released.
#include "base/back_off.hpp"
#include "locks/lock_core.hpp"
#include "queue/node_removals.hpp"

#include <avout/errors.hpp>

#include <algorithm>

namespace avout::detail {

namespace {

// A connection loss without a session event (a reply that timed out or was lost while the
// connection stayed up) wakes nobody: waits that ride out connection loss retry after a
// pause growing from 50 ms to a second.
constexpr BackOff retry_pauses{std::chrono::milliseconds(50), std::chrono::seconds(1)};

// How long a lock wait that gave up (its deadline passed) still waits for its removals'
// replies before leaving them to the client's removals and returning.
constexpr std::chrono::milliseconds give_up_grace{50};

// Ephemeral lock nodes are never changed: each is released at version 0.
constexpr std::int32_t lock_node_version = 0;

}  // namespace

std::optional<std::string> LockCore::create_node(SequentialQueue& queue, const std::string& prefix,
                                                 const Deadline& deadline, bool sent) {
  // Curator's protected mode: a create whose reply was lost may have landed, so before
  // creating again the engine looks for the unique id in the name. A create still unknown at
  // the deadline is left to removals_, which removes what it made once the session answers
  // (or ends).
  std::optional<std::string> node;
  try {
    if (sent) node = queue.find(prefix, deadline);
    if (!node) node = queue.create(prefix, {}, deadline);
  } catch (const Timeout&) {
    // find() ran out of time: the first create's outcome is still unknown.
    removals_->post_created(queue.folder(), prefix, session_.generation());
    if (!deadline.expired()) throw;  // this thread's ReplyDeadline, not the lock's deadline
    return std::nullopt;
  }
  // Posted on the session current now: a create sent on an earlier one went with it.
  if (!node) removals_->post_created(queue.folder(), prefix, session_.generation());
  return node;
}

bool LockCore::ride_out(std::size_t attempt, std::uint64_t seen, const Deadline& deadline) {
  const auto pause = std::chrono::steady_clock::now() + back_off_pause(attempt, retry_pauses);
  (void)wait_fired(std::make_shared<bool>(false), seen, deadline.no_later_than(pause));
  return !deadline.expired();
}

void LockCore::give_up(std::vector<std::string> nodes, const Deadline& deadline) {
  // A reply not in by the deadline (or shortly after it, once it passed) leaves the node to
  // removals_: the delete is out, so this session's later requests see it gone anyway.
  auto until = std::chrono::steady_clock::now() + give_up_grace;
  if (!deadline.expired()) until = std::max(until, deadline.time_or_far());
  const auto generation = session_.generation();
  for (const auto& node : nodes) {
    if (!node.empty()) {
      (void)removals_->remove_now(queues_.holding(node), node, generation, Deadline::at(until));
    }
  }
}

void LockCore::remove_own(const std::string& node) {
  // Done once deleted or known gone with the session. While disconnected, wait for the
  // session to come back; once the server may have ended it, the client's removals take the
  // node over (and delete it if the session lives on).
  const auto generation = session_.generation();
  for (std::size_t attempt = 0;; ++attempt) {
    const auto seen = session_events();
    try {
      if (session_.generation() != generation) return;  // the node went with its session
      const auto released = queues_.holding(node).release(node, lock_node_version, Deadline{});
      if (released.has_value()) return;   // deleted, or gone already (with its session too)
      removals_->post(node, generation);  // the thread's reply deadline passed first
      return;
    } catch (const ConnectionLoss&) {
    }
    std::unique_lock lock(mutex_);
    const bool woken = changed_.wait_for(lock, back_off_pause(attempt, retry_pauses), [&] {
      return session_events_ != seen || stopping_ || liveness_.lapsed();
    });
    if (!woken || session_events_ != seen) continue;
    removals_->post(node, generation);  // retried there until done or the session is gone
    return;
  }
}

void LockCore::remove_hold_nodes(const Hold& hold) {
  // The gate first: readers may enter as soon as it is gone; then our place in line.
  if (!hold.gate.empty()) remove_own(hold.gate);
  if (!hold.node.empty()) remove_own(hold.node);
}

WatchCallback LockCore::wake(std::shared_ptr<bool> fired) const {
  return [weak = std::weak_ptr<const LockCore>(weak_from_this()), fired](const WatchEvent&) {
    auto self = std::const_pointer_cast<LockCore>(weak.lock());
    if (!self) return;
    std::lock_guard lock(self->mutex_);
    if (fired) *fired = true;
    ++self->events_;
    self->changed_.notify_all();
  };
}

bool LockCore::wait_fired(const std::shared_ptr<bool>& fired, std::uint64_t session_seen,
                          const Deadline& deadline) {
  // Only our own watch (or a session change) wakes us: other waiters' churn does not.
  std::unique_lock lock(mutex_);
  changed_.wait_until(lock, deadline.time_or_far(), [&] {
    return *fired || session_events_ != session_seen || stopping_ || deadline.stop_requested();
  });
  return !deadline.expired();
}

std::uint64_t LockCore::session_events() const {
  std::lock_guard lock(mutex_);
  return session_events_;
}

}  // namespace avout::detail
