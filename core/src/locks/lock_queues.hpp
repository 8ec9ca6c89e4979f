#pragma once
// The queues of one lock on the sequential-queue engine (queue/sequential_queue.hpp): its
// folder holds "writers", "readers" and "gates", each a queue of ephemeral nodes named
// "<w|r|g>-<16 hex digits>-<sequence>" (the wire format every avout process of this version
// writes and reads: the engine's NodeKind with 16 hex-digit ids is exactly that).

#include "locks/rw_policy.hpp"
#include "queue/sequential_queue.hpp"

#include <avout/zookeeper_session.hpp>

#include <string>

namespace avout::detail {

/// The kind of the nodes of a lock's queue `which`: "w", "r" or "g", with ids of 16 hex
/// digits (unique_writer_id), as lock nodes always had.
NodeKind lock_node_kind(LockQueue which);

/// The writer, reader and gate queues of the lock at one path.
class LockQueues {
 public:
  /// The queues below the lock node `path` (the folders are made by LockCore::start).
  LockQueues(ZooKeeperSession& session, const std::string& path);

  /// The queue `which`.
  SequentialQueue& operator[](LockQueue which);
  /// The queue a node of this lock (a path from one of its queues) sits in: the one to
  /// release it by.
  SequentialQueue& holding(const std::string& node);

  SequentialQueue writers;  ///< writers in FIFO order (a mutex's only queue)
  SequentialQueue readers;  ///< readers inside or entering
  SequentialQueue gates;    ///< gates closed by soft writers whose turn came
};

}  // namespace avout::detail
