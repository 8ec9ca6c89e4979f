#pragma once
// The engine of avout::Barrier (public header avout/barrier.hpp; the protocol in
// recipes/barrier_round.hpp). Participants queue in the barrier's folder through the
// sequential-queue engine (protected create, listing in order, the window of nodes to watch,
// release at an exact version); the folder node's record says which of them entered together.
// A node whose delete is not confirmed goes to the client's node removals.

#include "queue/sequential_queue.hpp"
#include "recipes/barrier_round.hpp"
#include "recipes/wake_signal.hpp"

#include <avout/deadline.hpp>
#include <avout/zookeeper_session.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace avout::detail {

class NodeRemovals;

/// One participant of the barrier `name`, whose folder is `folder`.
class BarrierCore {
 public:
  /// Opens the barrier: creates its folder when new and records `n` and an open round there,
  /// or throws Mismatch when the folder records another count. `removals` (the client's)
  /// takes the nodes whose delete is not confirmed.
  BarrierCore(ZooKeeperSession& session, std::shared_ptr<NodeRemovals> removals, std::string name,
              std::string folder, std::size_t n);
  /// Stops listening to the session; a node still queued is released (removals_ retries).
  ~BarrierCore();
  BarrierCore(const BarrierCore&) = delete;
  BarrierCore& operator=(const BarrierCore&) = delete;

  /// See Barrier::enter.
  void enter(const Deadline& deadline);
  /// See Barrier::leave.
  void leave(const Deadline& deadline);
  /// The participant count.
  std::size_t participants() const { return n_; }
  /// The barrier's name.
  const std::string& name() const { return name_; }

 private:
  // The folder's children and its record, read after a sync, the listing taken while the
  // record stood at `version`; the first read sets a watch on the record. nullopt at the
  // deadline.
  struct Snapshot {
    std::vector<std::string> children;  // the folder's children, as listed
    BarrierRound round;                 // the round its record holds
    std::int32_t version = 0;           // the folder node's
  };
  std::optional<Snapshot> look(const Deadline& deadline);
  // Records N in the folder, or throws Mismatch when another N is recorded there.
  void claim_count();
  // The path of the folder's child `child`.
  std::string path_of(const std::string& child) const { return folder_ + "/" + child; }
  // The name of this participant's node (empty when none).
  std::string mine() const;
  // True when `round` is closed with this participant's node among its members.
  bool member(const BarrierRound& round) const;
  // The bound of an undoing step after the caller's deadline: one session timeout.
  Deadline grace() const;
  // The wake-up counter, for watch callbacks to hold.
  std::shared_ptr<WakeSignal> wake() const { return wake_; }

  // Enter's steps (barrier_enter.cpp).
  // Closes the open round `seen` with the first N of `line`; true when it landed.
  bool try_close(const Snapshot& seen, const std::vector<std::string>& line,
                 const Deadline& deadline);
  // After enter's deadline: removes our node (the create of `prefix`) unless the round
  // closed with it; true when it did (entered after all).
  bool withdraw(const std::string& prefix);
  // Leave's steps (barrier_leave.cpp).
  // Creates our leaving record while our node is there; BarrierBroken when it is gone.
  void record_leaving(const std::string& record, const Deadline& deadline);
  // Whether our record at `path` landed (a lost reply's question; see the definition).
  bool recorded(const std::string& path, const Deadline& deadline, const std::string& what);
  // True when the round entered is over and completed; BarrierBroken when it broke.
  bool round_over(const Snapshot& seen, const std::string& record);
  // Watches every member's node for a death; false when one is gone already.
  bool watch_members(const Deadline& deadline);
  // Opens the next round after the one entered (`completed`: deleting the records).
  void reopen(const Snapshot& seen, bool completed);
  // After leave's deadline: withdraws the member (the round breaks), then throws Timeout;
  // returns when the round completed first.
  void give_up(const std::string& record, const std::string& what, const Deadline& deadline);
  // Releases our node and forgets the round: the object may enter again.
  void forget_round();
  // Deletes our node, its reply awaited within grace(); one not confirmed goes to removals_.
  void release_node() noexcept;
  // Deletes our record, forgets the round and throws BarrierBroken(`why`).
  [[noreturn]] void broken(const std::string& why, const std::string& record);

  ZooKeeperSession& session_;
  std::shared_ptr<NodeRemovals> removals_;  // the client's: outlives this core
  std::string name_;
  std::string folder_;
  std::size_t n_;
  SequentialQueue queue_;
  std::shared_ptr<WakeSignal> wake_ = std::make_shared<WakeSignal>();
  std::uint64_t listener_ = 0;

  std::mutex mutex_;                   // one enter or leave at a time
  std::optional<std::string> node_;    // this participant's node path
  std::uint64_t generation_ = 0;       // the session it was created in
  std::optional<BarrierRound> round_;  // the closed round entered
  std::int32_t round_version_ = 0;     // the folder node's version once it closed
};

}  // namespace avout::detail
