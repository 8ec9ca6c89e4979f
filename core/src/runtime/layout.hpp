#pragma once
// Where a deployment keeps its coordination data in ZooKeeper: every path avout builds, in
// one place (docs/architecture.md, "What lives where in ZooKeeper"), and the store keys of
// values, namespaced by deployment and kind (transactions.md rule 13).

#include <cstdint>
#include <string>

namespace avout::detail {

/// The paths of one deployment: `root` (ClientOptions::root) inside `chroot`.
class Layout {
 public:
  Layout(std::string chroot, std::string root);

  /// The deployment's root node.
  const std::string& root() const { return root_; }

  /// Set by every commit: its mzxid is a read point.
  const std::string& stm_clock() const { return stm_clock_; }
  /// Parent of every ref head.
  const std::string& ref_heads() const { return ref_heads_; }
  /// The head node of the ref `name`.
  std::string ref_head(const std::string& name) const { return ref_heads_ + name; }
  /// Parent of every barging tag.
  const std::string& tags() const { return tags_; }
  /// The barging tag of the ref `name`.
  std::string tag(const std::string& name) const { return tags_ + name; }
  /// Parent of the commit outcome markers.
  const std::string& markers() const { return markers_; }
  /// The outcome marker of the commit attempt `attempt`.
  std::string marker(const std::string& attempt) const { return markers_ + "/" + attempt; }
  /// Parent of the sessions' liveness nodes.
  const std::string& sessions() const { return sessions_; }
  /// The liveness node of `session`.
  std::string session(std::int64_t session) const;

  /// The node of the atom `name` whose value ZooKeeper holds.
  std::string atom(const std::string& name) const { return root_ + "/atoms" + name; }
  /// Parent of the atom nodes.
  std::string atoms() const { return root_ + "/atoms"; }
  /// The folder where the ZooKeeper store keeps the values stored under the key `key`.
  std::string ref_values(const std::string& key) const { return root_ + "/ref-values" + key; }
  /// The change notice node of the atom `name` held in another store.
  std::string atom_notice(const std::string& name) const { return atom_notices() + name; }
  /// Parent of the atom notice nodes.
  std::string atom_notices() const { return root_ + "/atom-notices"; }

  /// The store record of the `kind` ("atom", "ref", "agent") `name`: which store keeps its
  /// values (records/store_record.hpp), under stores/atoms, stores/refs, stores/agents.
  std::string store_record(const std::string& kind, const std::string& name) const {
    return store_records() + "/" + kind + "s" + name;
  }
  /// Parent of the store records of every kind.
  std::string store_records() const { return root_ + "/stores"; }

  /// The head node of the agent `name`.
  std::string agent_head(const std::string& name) const { return agent_heads() + name; }
  /// Parent of the agent heads.
  std::string agent_heads() const { return root_ + "/agents/heads"; }
  /// The send queue of the agent `name`.
  std::string agent_queue(const std::string& name) const { return root_ + "/agents/queues" + name; }

  /// The folder of the lock `name` (its writers queue), or of the read-write lock `name`.
  std::string lock(const std::string& name, bool read_write) const {
    return (read_write ? read_write_locks() : locks()) + name;
  }
  /// Parent of the locks.
  std::string locks() const { return root_ + "/locks"; }
  /// Parent of the read-write locks.
  std::string read_write_locks() const { return root_ + "/rwlocks"; }
  /// The token node of the lease lock `name`.
  std::string lease(const std::string& name) const { return leases() + name; }
  /// Parent of the lease locks.
  std::string leases() const { return root_ + "/leases"; }

  /// The folder of the barrier `name` (its participants, its count and round in its data).
  std::string barrier(const std::string& name) const { return barriers() + name; }
  /// Parent of the barriers.
  std::string barriers() const { return root_ + "/barriers"; }
  /// The folder of the semaphore `name` (its permit nodes; its N in its data).
  std::string semaphore(const std::string& name) const { return semaphores() + name; }
  /// Parent of the semaphores.
  std::string semaphores() const { return root_ + "/semaphores"; }
  /// The folder of the leader election `name` (its candidates' nodes).
  std::string election(const std::string& name) const { return elections() + name; }
  /// Parent of the leader elections.
  std::string elections() const { return root_ + "/elections"; }

  /// The folder of the work queue `name` (its items; its takers' line in "waiters").
  std::string work_queue(const std::string& name) const { return work_queues() + name; }
  /// Parent of the work queues.
  std::string work_queues() const { return root_ + "/queues"; }

  /// The name stores keep the values of the `kind` ("ref", "agent", "atom") `name` under:
  /// unique per deployment (chroot and root) and per kind, so nothing else shares its keys.
  std::string value_key(const std::string& kind, const std::string& name) const;

 private:
  std::string chroot_;
  std::string root_;
  std::string stm_clock_;
  std::string ref_heads_;
  std::string tags_;
  std::string markers_;
  std::string sessions_;
};

}  // namespace avout::detail
