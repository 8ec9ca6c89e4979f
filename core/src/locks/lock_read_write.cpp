// A ReadWriteLock's readers, and what its writers do once first in line: as the lock's
// writer policy (locks/rw_policy.hpp) says.
#include "locks/lock_core.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

bool LockCore::bar_readers(const Deadline& deadline, Hold& hold) {
  if (!policy_) return true;  // a plain mutex: first in line holds
  const ReadWritePolicy& rules = ReadWritePolicy::of(*policy_);
  // Hard: readers enter only while no writer is queued, so the queue itself is the gate:
  // successive writers keep new readers out. Wait for those inside to leave.
  if (!rules.closes_gate()) return wait_for_readers_to_leave(deadline, false);
  while (true) {
    if (!wait_for_readers_to_leave(deadline, rules.waits_for_quiet())) return false;
    // Close the gate: readers arriving from now on wait. Each gate has a name of its own,
    // so no other writer's (or session's) removal can take ours away.
    auto gate = create_node(queues_.gates, queues_.gates.fresh_prefix(), deadline);
    if (!gate) return false;
    hold.gate = *gate;
    // A reader may have entered between our look and the gate: look again.
    const auto readers = readers_now(deadline);
    if (!readers) return false;
    if (readers->empty()) return true;
    give_up({hold.gate}, deadline);
    hold.gate.clear();
  }
}

std::optional<std::vector<std::string>> LockCore::readers_now(const Deadline& deadline) {
  // Rides out a connection loss with the gate closed (issue 35, item 12).
  for (std::size_t losses = 0;;) {
    const auto seen = session_events();
    try {
      return queues_.readers.list(deadline);  // nullopt: the deadline passed
    } catch (const ConnectionLoss&) {
      if (!ride_out(losses++, seen, deadline)) return std::nullopt;
    }
  }
}

bool LockCore::wait_for_readers_to_leave(const Deadline& deadline, bool quiet) {
  for (std::size_t losses = 0;;) {
    const auto seen = session_events();
    auto fired = std::make_shared<bool>(false);
    bool empty = false;
    try {
      const auto readers = queues_.readers.list(deadline, wake(fired));
      if (!readers) return false;  // the deadline passed
      empty = readers->empty();
    } catch (const ConnectionLoss&) {
      if (!ride_out(losses++, seen, deadline)) return false;
      continue;
    }
    if (!empty) {
      if (!wait_fired(fired, seen, deadline)) return false;
      continue;
    }
    if (!quiet) return true;
    // timed_soft: take the lock only after a quiet period in which no reader came or went.
    const Deadline quiet_end =
        deadline.no_later_than(std::chrono::steady_clock::now() + quiet_period_);
    if (!wait_fired(fired, seen, quiet_end)) return !deadline.expired();  // quiet, or out of time
    if (deadline.expired()) return false;
  }
}

bool LockCore::acquire_shared(const Deadline& deadline, Hold& hold) {
  // What bars readers: any queued writer (hard) or a closed gate (soft). Only the newest
  // barrier is watched: readers are not woken by every change of the writer queue (no
  // herd), and once it is gone the earlier ones are too (FIFO).
  SequentialQueue& barriers = queues_[ReadWritePolicy::of(*policy_).reader_barrier()];
  const HoldRule reader = HoldRule::no_writer_ahead(barriers.kind().kind);
  for (std::size_t losses = 0;;) {
    const auto seen = session_events();
    auto fired = std::make_shared<bool>(false);
    bool lost = false;
    try {
      auto node = create_node(queues_.readers, queues_.readers.fresh_prefix(), deadline);
      if (!node) return false;  // the deadline passed; an unknown create is removals_'s
      hold.node = *node;
      // The sync makes our view at least as new as our own create: a writer that queued
      // (hard) or closed the gate (soft) before it is seen; one that does so after sees us.
      const auto turn = barriers.turn("", reader, wake(fired), deadline);
      if (!turn) {
        give_up({hold.node}, deadline);
        return false;
      }
      if (turn->holds) return true;
      if (turn->watch.empty()) *fired = true;  // the barrier went already: look again
    } catch (const ConnectionLoss&) {
      // Our node (if any) goes, and we look again after the reconnect or a pause.
      lost = true;
    } catch (...) {
      give_up({hold.node}, deadline);
      throw;
    }
    give_up({hold.node}, deadline);
    hold.node.clear();
    if (!(lost ? ride_out(losses++, seen, deadline) : wait_fired(fired, seen, deadline))) {
      return false;
    }
  }
}

}  // namespace avout::detail
