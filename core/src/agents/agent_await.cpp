// await: the tickets of this process's sends, and the sends dropped unrun it reports.
#include "agents/agent_core.hpp"
#include "stm/stm.hpp"

#include <avout/errors.hpp>

#include <stop_token>
#include <utility>

namespace avout::detail {

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

bool AgentCore::await_until(const Deadline& deadline) {
  if (in_action()) throw Error("agent " + name_ + ": await inside an agent action");
  if (Transaction::current() != nullptr) throw Error("agent " + name_ + ": await inside dosync");
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

}  // namespace avout::detail
