#pragma once
// Deleting an agent: its head becomes a tombstone (a conditional write at the version read,
// so a batch racing it fails its multi and then reads Deleted), then its stored values are
// erased. Every process's worker that next reads the head drops its pending sends: their
// awaiters get Deleted, later sends throw it.

#include "runtime/runtime.hpp"

#include <avout/backend.hpp>

#include <string>

namespace avout::detail {

/// Removes the agent `name` whose values live in `store`. True when this call removed it
/// (or its lost reply did), false when there was nothing to remove (its values are erased
/// again all the same when a tombstone is found: an earlier removal may have stopped midway).
bool remove_agent(Runtime& runtime, const std::string& name, Store& store);

}  // namespace avout::detail
