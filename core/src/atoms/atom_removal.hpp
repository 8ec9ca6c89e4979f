#pragma once
// Deleting an atom: its cell's value is replaced by a tombstone through the cell's own
// compare-and-set, so a swap racing it fails its version check and then reads Deleted, and
// nothing recreates the atom (create_if_absent finds the cell taken).

#include <avout/backend.hpp>
#include <avout/zookeeper_session.hpp>

#include <cstddef>
#include <string>

namespace avout::detail {

/// Writes the tombstone into the atom `name`'s `cell`, then touches `notice` (empty: none,
/// the cell is itself a watched node) so watchers in every process learn of it. True when
/// this call removed it (or its lost reply did), false when there was nothing to remove.
bool remove_atom_cell(const std::string& name, AtomState& cell, ZooKeeperSession& session,
                      const std::string& notice, std::size_t retry_limit);

}  // namespace avout::detail
