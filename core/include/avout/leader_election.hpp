#pragma once
// avout::LeaderElection: one leader among the candidates of a name, on ZooKeeper
// (docs/recipes.md, "Leader election"). Each campaign queues an ephemeral sequential node
// holding the candidate's id; the first node in line leads, each other candidate watches only
// the node right ahead of it (no herd). leader() reads the first node's id, from any process.
//
// Honesty: is_leader() is true only while the session may still back the node. A disconnect
// past the point where the server may have ended the session (the lapse), an expiry, or a
// stall of this process (a SIGSTOP past its session timeout) makes it false at once, before
// another candidate can lead; the lapse and the expiry also end the leadership: on_revoked
// callbacks run once per lost leadership, on the client's callback thread (as a lock's
// on_lost), and a node the session may still hold is deleted when the connection is back.
// A renewed session never inherits the old one's leadership: campaign() again to lead.
//
// Fencing token: the zxid that created the leader's node (as a lock's token). A later
// leadership's node was queued after the earlier leader's node was created, so its zxid is
// larger: tokens strictly increase with every leadership of the name, across processes and
// across the wrap of the folder's sequence counter (zxids are 64-bit and never wrap in the
// life of an ensemble).
//
// guarded_by(election): the commit multi checks that the leader's node still exists, so a
// deposed leader's commit cannot land; it throws LockLost (a leadership is a hold like a
// lock's, and callers already catch LockLost for "what I held is gone").
//
// What the calls throw (all derive from avout::Error):
//   Timeout         campaign(deadline): the deadline passed or its stop token was stopped; the
//                   candidate's node is withdrawn (nothing left behind)
//   LockLost        dosync(guarded_by(e), ...) when e does not lead (any more)
//   Timeout         leader(): ZooKeeper did not answer within two session timeouts

#include <avout/deadline.hpp>
#include <avout/export.hpp>
#include <avout/guarded_by.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace avout {

namespace detail {
class ElectionCore;
}

/// A candidate in the leader election of one name (Client::leader_election). Copies share
/// it; destroying the last copy resigns. Must not outlive its Client.
class AVOUT_API LeaderElection {
 public:
  /// Blocks until this candidate leads (returns at once when it already does).
  void campaign();
  /// As campaign(); Timeout once `deadline` passes (the candidacy withdrawn).
  void campaign(const Deadline& deadline);
  /// True while this candidate leads and its session may still back it.
  bool is_leader() const;
  /// The id of the current leader (the first candidate in line), from any process; nullopt
  /// when nobody campaigns. Reads after a sync; Timeout past two session timeouts.
  std::optional<std::string> leader() const;
  /// Adds a callback run once per lost leadership (not after resign()).
  void on_revoked(std::function<void()> callback);
  /// The token of the current leadership (0 when not leading): strictly increasing with
  /// every leadership of the name.
  std::uint64_t fencing_token() const;
  /// Gives up leadership or candidacy (idempotent): not leading before the node is deleted.
  /// Waits for a campaign() under way on another thread to end.
  void resign();
  /// The election's name.
  const std::string& name() const;
  /// This candidate's id (what leader() returns while it leads).
  const std::string& id() const;

 private:
  friend class Client;
  friend GuardedBy guarded_by(const LeaderElection& election);
  /// Made by Client::leader_election only.
  explicit LeaderElection(std::shared_ptr<detail::ElectionCore> core) : core_(std::move(core)) {}
  std::shared_ptr<detail::ElectionCore> core_;  ///< the candidate, shared by copies
};

/// For Client::dosync(guarded_by(election), body): the transaction commits only while
/// `election` still leads; otherwise it throws LockLost and commits nothing.
AVOUT_API GuardedBy guarded_by(const LeaderElection& election);

}  // namespace avout
