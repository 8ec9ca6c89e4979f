#pragma once
// What await waits for: each send of this process gets the next ticket when queued, and
// await waits until none up to the last one issued before the call is unfinished (counts
// alone would let a send queued after the call, finishing first, stand in for one made
// before it). It also reports the sends dropped since the last await. Under a mutex of its
// own: a send's ticket ends with the counts of how it ended, in one step, so await sees both.

#include <avout/deadline.hpp>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace avout::detail {

class AwaitTickets {
 public:
  /// A new unfinished send's ticket.
  std::uint64_t issue();
  /// Ends the tickets of sends that ran, or, when `dropped`, of sends dropped because their
  /// nodes vanished with an expired session (await reports those).
  void end(const std::vector<std::uint64_t>& tickets, bool dropped);
  /// A send dropped unrun: its `ticket` (if it was given one) ends, and await reports it.
  void drop(std::optional<std::uint64_t> ticket);
  /// Sends a failed agent dropped unrun, with its `error`: await reports them (counted before
  /// their tickets end).
  void add_unrun(std::size_t count, const std::string& error);
  /// The agent was removed: every unfinished ticket ends, and every later wait throws
  /// Deleted.
  void end_deleted();
  /// Waits until every ticket issued before the call ended; false once `deadline` expired
  /// (its stop token included). Throws Deleted once the agent was removed, SessionExpired for sends dropped since the last
  /// await, else AgentFailed for sends a failed agent dropped unrun (each reported once);
  /// `agent` names the agent in the messages.
  bool wait(const Deadline& deadline, const std::string& agent);

 private:
  std::mutex mutex_;  // guards the members below
  std::condition_variable idle_;
  std::uint64_t issued_ = 0;  // the last ticket issued
  std::set<std::uint64_t> unfinished_;
  std::uint64_t dropped_ = 0;  // sends that vanished with an expired session, not yet awaited
  std::uint64_t unrun_ = 0;    // sends a failed agent dropped unrun, not yet awaited
  std::string unrun_error_;    // the agent's error when it dropped the last of them
  bool deleted_ = false;       // the agent was removed (its pending sends dropped)
};

}  // namespace avout::detail
