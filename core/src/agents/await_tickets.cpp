#include "agents/await_tickets.hpp"

#include <avout/errors.hpp>

#include <stop_token>
#include <utility>

namespace avout::detail {

std::uint64_t AwaitTickets::issue() {
  std::lock_guard lock(mutex_);
  unfinished_.insert(++issued_);
  return issued_;
}

void AwaitTickets::end(const std::vector<std::uint64_t>& tickets, bool dropped) {
  std::lock_guard lock(mutex_);
  for (const auto ticket : tickets) unfinished_.erase(ticket);
  if (dropped) dropped_ += tickets.size();
  idle_.notify_all();
}

void AwaitTickets::drop(std::optional<std::uint64_t> ticket) {
  std::lock_guard lock(mutex_);
  if (ticket) unfinished_.erase(*ticket);
  ++dropped_;
  idle_.notify_all();
}

void AwaitTickets::add_unrun(std::size_t count, const std::string& error) {
  std::lock_guard lock(mutex_);
  unrun_ += count;
  unrun_error_ = error;
}

void AwaitTickets::end_deleted() {
  std::lock_guard lock(mutex_);
  unfinished_.clear();
  deleted_ = true;
  idle_.notify_all();
}

bool AwaitTickets::wait(const Deadline& deadline, const std::string& agent) {
  // A stop request wakes the wait (made before the lock: it may run at once).
  std::stop_callback wake_on_stop(deadline.stop_token(), [this] {
    std::lock_guard lock(mutex_);
    idle_.notify_all();
  });
  std::unique_lock lock(mutex_);
  // Taken once: sends other threads make while this one waits are not waited for.
  const std::uint64_t target = issued_;
  auto done = [&] { return unfinished_.empty() || *unfinished_.begin() > target; };
  idle_.wait_until(lock, deadline.time_or_far(),
                   [&] { return done() || deadline.stop_requested(); });
  if (!done()) return false;
  if (deleted_) {
    throw Deleted("agent " + agent +
                  " was deleted; actions this process sent and that had not "
                  "run were dropped");
  }
  if (const auto dropped = std::exchange(dropped_, 0); dropped > 0) {
    throw SessionExpired("agent " + agent + ": " + std::to_string(dropped) +
                         " action(s) sent by this process were dropped: their send nodes "
                         "vanished with an expired ZooKeeper session, or (made by an action) "
                         "could not be created (see the log)");
  }
  if (const auto unrun = std::exchange(unrun_, 0); unrun > 0) {
    throw AgentFailed("agent " + agent + " failed (" + unrun_error_ +
                      "): " + std::to_string(unrun) +
                      " action(s) sent by this process were dropped "
                      "unrun; restart it first");
  }
  return true;
}

}  // namespace avout::detail
