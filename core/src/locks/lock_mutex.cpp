// The mutex core: a writer's place in the writer queue, and its wait for its turn. A
// ReadWriteLock's writer then bars readers (lock_read_write.cpp).
#include "locks/lock_core.hpp"
#include "queue/node_removals.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

bool LockCore::acquire_exclusive(const Deadline& deadline, Hold& hold) {
  std::optional<std::vector<std::string>> listed;
  if (!queue_writer(deadline, hold, listed)) return false;
  try {
    if (wait_first_in_line(name_of(hold.node), std::move(listed), deadline) &&
        bar_readers(deadline, hold)) {
      return true;
    }
  } catch (...) {
    give_up({hold.gate, hold.node}, deadline);
    throw;
  }
  give_up({hold.gate, hold.node}, deadline);
  return false;
}

bool LockCore::queue_writer(const Deadline& deadline, Hold& hold,
                            std::optional<std::vector<std::string>>& listed) {
  // The create and the first listing travel together: the listing, later on the same
  // session, already holds our node, so an uncontended lock costs one round trip.
  SequentialQueue& writers = queues_.writers;
  const std::string prefix = writers.fresh_prefix();
  const auto made = writers.create_op(prefix);
  const auto generation = session_.generation();
  auto created = session_.create_async(made.path, made.data, made.mode);
  auto first_listing = session_.children_async(writers.folder());
  std::optional<std::string> node;
  try {
    node = session_.wait(created.share(), deadline);
    if (!node) removals_->post_created(writers.folder(), prefix, generation);  // outcome unknown
  } catch (const ConnectionLoss&) {
    node = create_node(writers, prefix, deadline, true);
  }
  if (!node) return false;
  hold.node = *node;
  try {
    listed = session_.wait(first_listing.share(), deadline);  // nullopt: the deadline passed
  } catch (const ConnectionLoss&) {
  }
  return true;
}

bool LockCore::wait_first_in_line(const std::string& own,
                                  std::optional<std::vector<std::string>> listed,
                                  const Deadline& deadline) {
  SequentialQueue& writers = queues_.writers;
  const HoldRule mutex = HoldRule::first(1);
  for (std::size_t losses = 0;;) {
    const auto seen = session_events();
    // Only the writer just before us is watched (no herd): its deletion means "look again".
    auto fired = std::make_shared<bool>(false);
    std::optional<Turn> turn;
    try {
      turn = listed ? writers.turn_in(std::move(*listed), own, mutex, wake(fired), deadline)
                    : writers.turn(own, mutex, wake(fired), deadline);
      listed.reset();
    } catch (const ConnectionLoss&) {
      // The session may well survive: look again after the reconnect (or expiry) or a pause.
      listed.reset();
      if (!ride_out(losses++, seen, deadline)) return false;
      continue;
    }
    if (!turn) return false;  // the deadline passed
    if (turn->vanished) throw LockLost("lock " + name_ + ": its node vanished (session lost)");
    if (turn->holds) return true;
    if (!turn->watch.empty()) (void)wait_fired(fired, seen, deadline);
    if (deadline.expired()) return false;
  }
}

}  // namespace avout::detail
