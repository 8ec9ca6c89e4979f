#pragma once
// avout::Barrier: a double barrier of N participants on ZooKeeper (docs/recipes.md,
// "Barrier"). enter() returns once N participants have entered the same round; leave()
// returns once all N of that round have left.
//
// Rounds: a barrier name runs one round after another. Participants that enter while a
// round is under way (entered, not yet all left) wait for the next one; a round takes the
// first N to arrive. One Barrier object is one participant: enter, then leave, then it may
// enter the next round; enter twice, or leave without having entered, throws Error.
//
// Failure model: a participant that has not arrived is indistinguishable from a slow one,
// so only enter's deadline bounds that wait. A participant that times out in enter, or whose
// session ends before the round is complete, is not counted (nothing of it stays behind). A
// member that entered and then died (its session ended, or it gave up in leave) breaks the
// round: every member's leave throws BarrierBroken instead of waiting forever, and the name
// is ready for the next round. A member whose own session ended after entering (the client
// renewed it: its node is gone) counts as died: its leave throws BarrierBroken too, unless
// it had recorded its leaving before. Lost replies are resolved (a create is found again by
// the unique id in its node's name, so it counts once).
//
// What the calls throw (all derive from avout::Error):
//   Timeout        enter(deadline) / leave(deadline): the deadline passed or its token was
//                  stopped; this participant is withdrawn (in leave: the round breaks)
//   BarrierBroken  leave: a member of the round died, or this participant's session ended
//   Mismatch       Client::barrier with another participant count than the name's creator
//   Error          enter twice, or leave without enter

#include <avout/deadline.hpp>
#include <avout/errors.hpp>
#include <avout/export.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace avout {

namespace detail {
class BarrierCore;
}

/// One participant of a distributed double barrier (Client::barrier). Copies share it;
/// destroying the last copy between enter and leave withdraws it (the round breaks for the
/// others). Must not outlive its Client.
class AVOUT_API Barrier {
 public:
  /// Blocks until N participants (this one included) have entered this round.
  void enter();
  /// As enter(); Timeout once `deadline` passes, this participant withdrawn and not counted.
  void enter(const Deadline& deadline);
  /// Blocks until every member of the round has left; BarrierBroken if one died.
  void leave();
  /// As leave(); Timeout once `deadline` passes (the round then breaks for the others).
  void leave(const Deadline& deadline);
  /// The number of participants a round takes.
  std::size_t participants() const;
  /// The barrier's name.
  const std::string& name() const;

 private:
  friend class Client;
  /// Made by Client::barrier only.
  explicit Barrier(std::shared_ptr<detail::BarrierCore> core) : core_(std::move(core)) {}
  std::shared_ptr<detail::BarrierCore> core_;  ///< the participant, shared by copies
};

}  // namespace avout
