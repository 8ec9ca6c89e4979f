#pragma once
// What avout::inspect reads of the recipes (public header avout/inspect.hpp): their names
// below the layout's folders and each one's state, read with the recipes' own node kinds and
// records, so no tool parses their node names. Read-only: nothing here creates a node.

#include <avout/inspect.hpp>
#include <avout/zookeeper_session.hpp>

#include <optional>
#include <string>
#include <vector>

namespace avout::detail {

/// The names of the semaphores below `parent` (Layout::semaphores()), sorted.
std::vector<std::string> semaphore_names(ZooKeeperSession& session, const std::string& parent);
/// The names of the elections below `parent` (Layout::elections()), sorted. An election
/// nobody campaigns in whose folder holds another election's looks like a plain folder and
/// is not listed.
std::vector<std::string> election_names(ZooKeeperSession& session, const std::string& parent);
/// The names of the barriers below `parent` (Layout::barriers()), sorted.
std::vector<std::string> barrier_names(ZooKeeperSession& session, const std::string& parent);
/// The names of the work queues below `parent` (Layout::work_queues()), sorted.
std::vector<std::string> work_queue_names(ZooKeeperSession& session, const std::string& parent);

/// The semaphore whose folder is `folder`, listed after a sync; nullopt when the folder does
/// not exist or records no count (a folder of names nested below). CodecError for a record
/// no semaphore wrote.
std::optional<inspect::SemaphoreState> read_semaphore(ZooKeeperSession& session,
                                                      const std::string& folder);
/// The election whose folder is `folder`, listed after a sync; nullopt when it does not exist.
std::optional<inspect::ElectionState> read_election(ZooKeeperSession& session,
                                                    const std::string& folder);
/// The barrier whose folder is `folder`, read after a sync; nullopt when the folder does not
/// exist or records no barrier (a folder of names nested below). CodecError for a record no
/// barrier wrote.
std::optional<inspect::BarrierState> read_barrier(ZooKeeperSession& session,
                                                  const std::string& folder);
/// The work queue whose folder is `folder`, listed after a sync; nullopt when it does not
/// exist.
std::optional<inspect::WorkQueueState> read_work_queue(ZooKeeperSession& session,
                                                       const std::string& folder);

}  // namespace avout::detail
