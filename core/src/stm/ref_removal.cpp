// StmContext::remove: deleting a ref. Its head becomes a tombstone in a commit-shaped multi
// (rule 1: only commits write heads; marker, the head at the version read, the clock), then
// its stored values are erased. The tombstone stays: a name recreated at version 0 would let
// an old version check pass, and every later reader, commit or creator sees Deleted.
#include "stm/stm_context.hpp"

#include "runtime/pending_markers.hpp"

#include <avout/errors.hpp>

#include <limits>

namespace avout::detail {

namespace {

// True once the head at `path` is a tombstone (also when it was made by another remover).
bool is_removed(ZooKeeperSession& session, const std::string& path) {
  try {
    return is_head_tombstone(session.get(path).data);
  } catch (const NoNode&) {
    return false;
  }
}

}  // namespace

bool StmContext::remove(const std::string& name, Store& store) {
  validate_path(name);
  auto& session = runtime_.session();
  const std::string head = runtime_.layout().ref_head(name);
  for (std::size_t attempt = 0; attempt < runtime_.options().retry_limit; ++attempt) {
    session.sync(head);  // a head another server has moved on already is seen as it is now
    NodeData node;
    try {
      node = session.get(head);
    } catch (const NoNode&) {
      return false;  // never created: nothing to remove
    }
    if (node.data.empty()) return false;  // only the parent of deeper names (rule 14)
    if (is_head_tombstone(node.data)) {
      erase_values(name, store);  // an earlier removal may have stopped before it
      return false;
    }
    if (node.stat.version == std::numeric_limits<std::int32_t>::max()) {
      throw VersionLimitReached("ref " + name + ": its head " + head + " cannot be written");
    }
    const std::string marker = runtime_.layout().marker(runtime_.new_point().id);
    // A lost reply is resolved through the marker (rule 6); a head that became a tombstone
    // meanwhile, by us or another remover, ends the same.
    const auto landed =
        runtime_.markers().commit({op::Create{marker, {}, CreateMode::persistent},
                                   op::SetData{head, encode_head_tombstone(), node.stat.version},
                                   op::SetData{runtime_.layout().stm_clock(), {}, -1}},
                                  marker, nullptr, 0, [&] { return is_removed(session, head); });
    if (!landed) {
      throw OutcomeUnknown("ref " + name + ": removing it: outcome unknown (ZooKeeper " +
                           "unreachable); marker " + marker);
    }
    if (!*landed) continue;  // a commit moved the head on: read it again
    erase_values(name, store);
    return true;
  }
  throw RetryLimitExceeded("ref " + name + ": commits kept moving its head while removing it");
}

// The head names none of them any more: every stored value is garbage now. A transaction
// still staging one sees its multi fail on the tombstone and erases its own; what a crash
// leaves, gc sweeps.
void StmContext::erase_values(const std::string& name, Store& store) {
  std::unique_ptr<ReferenceData> data(
      store.reference_data(runtime_.layout().value_key("ref", name)));
  for (const Point& point : data->points()) data->erase(point);
}

}  // namespace avout::detail
