#pragma once
// The one sequential-queue engine under the mutex, the read-write lock and agents' send order
// (Curator's LockInternals, without the waiting: each user waits its own way). A queue is the
// nodes of one kind in one folder (queue/queue_names.hpp); the engine makes them with a
// protected create (a unique id in the name, so a create whose reply was lost is found again
// instead of made twice), lists them in sequence order, says whether one holds or which nodes
// it watches (queue/hold_rule.hpp), and deletes one at its exact version. Every wait ends by
// one deadline rule (zk/outcome.hpp: the caller's, cut short by the thread's ReplyDeadline).

#include "queue/hold_rule.hpp"
#include "queue/queue_names.hpp"

#include <avout/deadline.hpp>
#include <avout/zookeeper_session.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace avout::detail {

/// How new a listing must be. after_sync: as new as every write made before it, any
/// session's (a sync goes first, pipelined: no round trip of its own for the client, but on
/// a follower the listing waits for the leader's answer to it). own_writes: as new as this
/// session's own writes (ZooKeeper's read-your-writes), what a user that only needs its own
/// nodes to be listed asks for on a hot path (agents' plan of a batch).
enum class Freshness { after_sync, own_writes };

/// The sequential queue of `kind` nodes in one folder of one session.
class SequentialQueue {
 public:
  /// The queue of `kind` nodes in `folder` (which must exist), created in `mode` (a
  /// sequential one: ephemeral for locks and sends, persistent for nodes that outlive one).
  SequentialQueue(ZooKeeperSession& session, std::string folder, NodeKind kind,
                  CreateMode mode = CreateMode::ephemeral_sequential);

  /// The folder's path.
  const std::string& folder() const { return folder_; }
  /// Which of the folder's children are this queue's.
  const NodeKind& kind() const { return kind_; }

  /// A name prefix with a fresh unique id, for one create (`mark`: queue_names.hpp).
  std::string fresh_prefix(std::string_view mark = {}) const;
  /// The op creating the node of `prefix` in a caller's multi (agents' grouped sends, a
  /// dosync's commit); after a lost reply, find(prefix) tells whether it landed.
  op::Create create_op(const std::string& prefix, Bytes data = {}) const;

  /// Creates the node of `prefix` alone; after a lost reply looks for it (a sync and a
  /// listing later) before creating again, so it is made once. Its path, or nullopt once the
  /// deadline passed with a create perhaps in flight (the caller's removals take `prefix`).
  /// `may_create` (empty: always) is asked before each create goes out, for a node that
  /// "not found" does not prove unused (agents' named sends): false gives up (nullopt,
  /// nothing sent by that attempt), a ConnectionLoss it throws is no answer (asked again
  /// after a pause).
  std::optional<std::string> create(const std::string& prefix, const Bytes& data,
                                    const Deadline& deadline,
                                    const std::function<bool()>& may_create = {});
  /// The path of the node a create of `prefix` made, read after a sync; nullopt when none
  /// landed (or it went with its session). Throws Timeout at the deadline (outcome_of).
  std::optional<std::string> find(const std::string& prefix, const Deadline& deadline);

  /// The queue's node names in order, read after a sync unless `freshness` says own_writes;
  /// `watch` fires on the folder's next child change. nullopt once the deadline passed.
  std::optional<std::vector<std::string>> list(const Deadline& deadline, WatchCallback watch = {},
                                               Freshness freshness = Freshness::after_sync);

  /// The turn of `own` (a name; empty: a node of another folder, after this whole queue)
  /// under `rule`, from a fresh listing, with `wake` set on each node to watch. Not holding
  /// with nothing to watch means "look again" (a node to watch was already gone); `vanished`
  /// when `own` is not in the queue (gone with its session). nullopt once the deadline passed.
  std::optional<Turn> turn(const std::string& own, const HoldRule& rule, WatchCallback wake,
                           const Deadline& deadline);

  /// As turn(), from `children` the caller listed itself (say, a listing sent right behind
  /// its create, so an uncontended lock costs one round trip).
  std::optional<Turn> turn_in(std::vector<std::string> children, const std::string& own,
                              const HoldRule& rule, WatchCallback wake, const Deadline& deadline);

  /// Deletes the node at `path` at exactly `version`: true when deleted, false when already
  /// gone (NoNode; for an ephemeral queue also SessionExpired: it went with the session).
  /// nullopt once the deadline passed with the delete in flight. BadVersion propagates.
  std::optional<bool> release(const std::string& path, std::int32_t version,
                              const Deadline& deadline);

 private:
  // The folder's children as listed after a sync (none for own_writes); nullopt once `bound`
  // passed.
  std::optional<std::vector<std::string>> synced_children(
      const Deadline& bound, WatchCallback watch, Freshness freshness = Freshness::after_sync);

  ZooKeeperSession& session_;
  std::string folder_;
  NodeKind kind_;
  CreateMode mode_;
};

}  // namespace avout::detail
