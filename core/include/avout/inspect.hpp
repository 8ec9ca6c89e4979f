#pragma once
// avout::inspect: a supported, read-only look into a deployment for tools and tests: the
// objects it holds, a ref's head, an atom's or agent's stored state, a ref's barging claim,
// the state of each recipe (semaphore, election, barrier, work queue), and where each
// object's coordination nodes are. Records and node names are decoded by the library. A
// name that is not a valid path ("", "x", "/a//b") is InvalidName, never a look elsewhere.
// Nothing here creates a node: looking at a recipe that does not exist says so (nullopt).

#include <avout/backend.hpp>
#include <avout/client.hpp>
#include <avout/export.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace avout::inspect {

/// The kinds of objects a deployment lists.
enum class Kind { atoms, refs, agents, leases, locks, semaphores, elections, barriers, queues };

/// Names of every object of `kind` in `client`'s deployment; deleted atoms (held in
/// ZooKeeper), refs and agents are left out (their tombstones stay).
AVOUT_API std::vector<std::string> names(Client& client, Kind kind);

/// An older committed version of a ref.
struct RefVersion {
  std::int64_t commit_zxid = 0;  ///< zxid of its commit
  Point point;                   ///< where its value is stored
};

/// A ref's head: its newest version, the older ones it keeps, and how many it keeps.
struct RefHead {
  Point newest;                     ///< where the newest value is stored
  std::int64_t commit_zxid = 0;     ///< zxid of the newest commit
  std::vector<RefVersion> history;  ///< older versions, newest first
  std::uint32_t keep = 0;           ///< older versions commits keep
};

/// The head of the ref `name`; nullopt when the ref does not exist.
AVOUT_API std::optional<RefHead> ref_head(Client& client, const std::string& name);

/// The transaction that claims a ref (transactions.md rule 10).
struct TagOwner {
  std::int64_t session = 0;           ///< the session that started it
  std::int64_t first_read_point = 0;  ///< read point of its first attempt
  std::uint64_t counter = 0;          ///< its per-client sequence number
};

/// Who claims the ref `name`; nullopt when nobody does (or the ref does not exist).
AVOUT_API std::optional<TagOwner> tag_owner(Client& client, const std::string& name);

/// An atom's stored state.
struct AtomValue {
  Bytes payload;             ///< the encoded value
  std::uint64_t writes = 0;  ///< writes so far
};

/// The atom `name` held in `store`; nullopt when it holds no value there.
AVOUT_API std::optional<AtomValue> atom(Client& client, Store& store, const std::string& name);

/// An agent's head.
struct AgentHead {
  Point point;                       ///< where its value is stored
  std::optional<std::string> error;  ///< set once an action failed, until restart
};

/// The head of the agent `name`; nullopt when the agent does not exist.
AVOUT_API std::optional<AgentHead> agent_head(Client& client, const std::string& name);

/// A node in a recipe's queue, as ZooKeeper reports it.
struct QueuedNode {
  std::string node;          ///< its name in the recipe's folder
  std::int64_t session = 0;  ///< the session owning it (0: a persistent node)
  std::uint64_t czxid = 0;   ///< the zxid that created it: a permit's or leader's fencing token
};

/// A semaphore: its N and its permit nodes in queue order, split at N.
struct SemaphoreState {
  std::size_t permits = 0;          ///< N, as its first opener recorded it
  std::vector<QueuedNode> holders;  ///< the first N nodes: they hold a permit
  std::vector<QueuedNode> waiters;  ///< the nodes behind them, in the order they are served
};

/// The semaphore `name` (listed after a sync); nullopt when it does not exist. CodecError
/// when its folder holds a record no semaphore wrote.
AVOUT_API std::optional<SemaphoreState> semaphore(Client& client, const std::string& name);

/// One candidate of a leader election.
struct Candidate {
  std::string id;   ///< the id it campaigns with (LeaderElection::id)
  QueuedNode node;  ///< its node in the election's line
};

/// A leader election: its candidates in line; the first leads (LeaderElection::leader()).
struct ElectionState {
  std::vector<Candidate> candidates;  ///< in line order; empty when nobody campaigns
};

/// The election `name` (listed after a sync); nullopt when nobody ever opened it. A folder
/// that only holds elections named below it reads as an election without candidates.
AVOUT_API std::optional<ElectionState> election(Client& client, const std::string& name);

/// A member of a barrier's closed round, and how far it got.
struct BarrierMember {
  QueuedNode node;    ///< its participant node (session 0 once the node is gone)
  std::string state;  ///< "inside" (entered, not left), "left", or "dead" (its node
                      ///< went without a leaving record: the round broke)
};

/// A double barrier: its N and its current round (docs/recipes.md, "Barrier").
struct BarrierState {
  std::size_t participants = 0;        ///< N, as its first opener recorded it
  std::uint64_t round = 0;             ///< rounds reopened before the current one
  bool closed = false;                 ///< the round's members entered (enter returned)
  bool previous_broke = false;         ///< open: the round before this one broke
  std::vector<BarrierMember> members;  ///< closed: the round's N members, in queue order
  std::vector<QueuedNode> waiting;     ///< participants queued for the next closing, in order
};

/// The barrier `name` (read after a sync); nullopt when it does not exist. CodecError when
/// its folder holds a record no barrier wrote.
AVOUT_API std::optional<BarrierState> barrier(Client& client, const std::string& name);

/// One item of a work queue.
struct QueueItem {
  std::string node;             ///< its node in the queue's folder
  Bytes payload;                ///< the encoded item
  std::int64_t created_ms = 0;  ///< when its put committed, ms since the epoch
};

/// A work queue: its length, its oldest item and how many takers wait.
struct WorkQueueState {
  std::size_t length = 0;           ///< items queued (committed puts not yet taken)
  std::optional<QueueItem> oldest;  ///< the item a take gets next; nullopt when empty
  std::size_t waiting_takers = 0;   ///< takers in the line waiting for items
};

/// The work queue `name` (listed after a sync); nullopt when it does not exist.
AVOUT_API std::optional<WorkQueueState> work_queue(Client& client, const std::string& name);

/// The store ZooKeeper records for the atom, ref or agent `name` (`kind` atoms, refs or
/// agents; InvalidName for another kind): which store keeps its values. nullopt when there is
/// no record: the object does not exist, or nothing attached it since records began.
/// CodecError when the record is malformed.
AVOUT_API std::optional<StoreIdentity> recorded_store(Client& client, Kind kind,
                                                      const std::string& name);
/// The store record node of the atom, ref or agent `name` (InvalidName for another kind).
AVOUT_API std::string store_record_path(const Client& client, Kind kind, const std::string& name);

/// The head node of the ref `name`.
AVOUT_API std::string ref_head_path(const Client& client, const std::string& name);
/// The barging tag node of the ref `name`.
AVOUT_API std::string tag_path(const Client& client, const std::string& name);
/// The parent of the commit outcome markers.
AVOUT_API std::string markers_path(const Client& client);
/// The outcome marker node of the commit attempt `attempt`.
AVOUT_API std::string marker_path(const Client& client, const std::string& attempt);
/// The head node of the agent `name`.
AVOUT_API std::string agent_head_path(const Client& client, const std::string& name);
/// The send queue node of the agent `name`.
AVOUT_API std::string agent_queue_path(const Client& client, const std::string& name);
/// The folder of the lock `name` (holding "writers"), or of the read-write lock `name`
/// (holding "writers", "readers" and "gates").
AVOUT_API std::string lock_path(const Client& client, const std::string& name, bool read_write = false);
/// The token node of the lease lock `name`.
AVOUT_API std::string lease_path(const Client& client, const std::string& name);

}  // namespace avout::inspect
