// avout::inspect: reads a deployment's coordination data through the library's own layout
// and decoders, for tools and tests.
#include "agents/agent_core.hpp"
#include "atoms/atom_core.hpp"
#include "recipes/recipe_inspection.hpp"
#include "records/stm_records.hpp"
#include "runtime/layout.hpp"
#include "runtime/zookeeper_held_values.hpp"

#include <avout/errors.hpp>
#include <avout/inspect.hpp>
#include <avout/zookeeper_tree.hpp>

#include <algorithm>
#include <cstring>

namespace avout::inspect {

namespace {

detail::Layout layout_of(const Client& client) {
  // The chroot is the session's: paths below are relative to it, value keys name it.
  return detail::Layout(client.options().chroot, client.options().root);
}

// Object names below `folder`: nodes with data (`with_data`) or leaves otherwise. A node of
// one byte is a deleted atom's, ref's or agent's tombstone (every live record is longer).
void walk(ZooKeeperSession& session, const std::string& folder, bool with_data,
          std::vector<std::string>& names) {
  walk_tree(session, folder, [&](const TreeNode& node) {
    if (with_data ? node.stat.data_length > 1 : node.stat.num_children == 0) {
      names.push_back(node.name);
    }
  });
}

// A lock's name from a leaf below its folder: the part before its "/writers" or "/readers".
void add_lock_names(const std::vector<std::string>& leaves, std::vector<std::string>& names) {
  for (const auto& leaf : leaves) {
    for (const char* queue : {"/writers", "/readers"}) {
      const auto at = leaf.rfind(queue);
      if (at != std::string::npos && at > 0 &&
          (at + std::strlen(queue) == leaf.size() || leaf[at + std::strlen(queue)] == '/')) {
        names.push_back(leaf.substr(0, at));
      }
    }
  }
}

std::optional<NodeData> read_if_present(ZooKeeperSession& session, const std::string& path) {
  try {
    return session.get(path);
  } catch (const NoNode&) {
    return std::nullopt;
  }
}

}  // namespace

std::vector<std::string> names(Client& client, Kind kind) {
  auto& session = client.session();
  const auto layout = layout_of(client);
  std::vector<std::string> found;
  switch (kind) {
    case Kind::atoms:
      walk(session, layout.atoms(), true, found);          // values in ZooKeeper
      walk(session, layout.atom_notices(), false, found);  // values in other stores
      break;
    case Kind::refs: walk(session, layout.ref_heads(), true, found); break;
    case Kind::agents: walk(session, layout.agent_heads(), true, found); break;
    case Kind::leases: walk(session, layout.leases(), true, found); break;
    case Kind::locks:
      // A lock's folder holds "writers" (and, for read-write locks, "readers" and "gates").
      for (const std::string& folder : {layout.locks(), layout.read_write_locks()}) {
        std::vector<std::string> leaves;
        walk(session, folder, false, leaves);  // empty queues and waiting nodes
        add_lock_names(leaves, found);
      }
      std::sort(found.begin(), found.end());
      found.erase(std::unique(found.begin(), found.end()), found.end());
      break;
    case Kind::semaphores: found = detail::semaphore_names(session, layout.semaphores()); break;
    case Kind::elections: found = detail::election_names(session, layout.elections()); break;
    case Kind::barriers: found = detail::barrier_names(session, layout.barriers()); break;
    case Kind::queues: found = detail::work_queue_names(session, layout.work_queues()); break;
  }
  return found;
}

std::optional<RefHead> ref_head(Client& client, const std::string& name) {
  const std::string path = ref_head_path(client, name);
  auto node = read_if_present(client.session(), path);
  if (!node) return std::nullopt;
  auto record = detail::decode_head(node->data, path);
  RefHead head{record.newest, node->stat.mzxid, {}, record.keep};
  for (auto& older : record.history) head.history.push_back(RefVersion{older.zxid, older.point});
  return head;
}

std::optional<TagOwner> tag_owner(Client& client, const std::string& name) {
  const std::string path = tag_path(client, name);
  auto node = read_if_present(client.session(), path);
  if (!node) return std::nullopt;
  auto age = detail::decode_tag(node->data, path);
  if (!age) return std::nullopt;
  return TagOwner{age->session, age->first_read_point, age->counter};
}

std::optional<AtomValue> atom(Client& client, Store& store, const std::string& name) {
  validate_path(name);
  // An atom held in Redis or PostgreSQL is keyed by deployment; one held in ZooKeeper is a node.
  auto state = store.atom_state(name);
  if (detail::held_node_path(*state).empty()) state = store.atom_state(client.atom_value_key(name));
  auto stored = state->get();
  if (!stored.exists()) return std::nullopt;
  auto envelope = detail::decode_envelope(stored.value, name);
  return AtomValue{std::move(envelope.payload), envelope.sequence};
}

std::optional<AgentHead> agent_head(Client& client, const std::string& name) {
  const std::string path = agent_head_path(client, name);
  auto node = read_if_present(client.session(), path);
  if (!node) return std::nullopt;
  auto head = detail::decode_agent_head(node->data, path);
  return AgentHead{std::move(head.point), std::move(head.error)};
}

std::optional<SemaphoreState> semaphore(Client& client, const std::string& name) {
  validate_path(name);
  return detail::read_semaphore(client.session(), layout_of(client).semaphore(name));
}

std::optional<ElectionState> election(Client& client, const std::string& name) {
  validate_path(name);
  return detail::read_election(client.session(), layout_of(client).election(name));
}

std::optional<BarrierState> barrier(Client& client, const std::string& name) {
  validate_path(name);
  return detail::read_barrier(client.session(), layout_of(client).barrier(name));
}

std::optional<WorkQueueState> work_queue(Client& client, const std::string& name) {
  validate_path(name);
  return detail::read_work_queue(client.session(), layout_of(client).work_queue(name));
}

std::string ref_head_path(const Client& client, const std::string& name) {
  validate_path(name);
  return layout_of(client).ref_head(name);
}

std::string tag_path(const Client& client, const std::string& name) {
  validate_path(name);
  return layout_of(client).tag(name);
}

std::string markers_path(const Client& client) { return layout_of(client).markers(); }

std::string marker_path(const Client& client, const std::string& attempt) {
  return layout_of(client).marker(attempt);
}

std::string agent_head_path(const Client& client, const std::string& name) {
  validate_path(name);
  return layout_of(client).agent_head(name);
}

std::string agent_queue_path(const Client& client, const std::string& name) {
  validate_path(name);
  return layout_of(client).agent_queue(name);
}

std::string lock_path(const Client& client, const std::string& name, bool read_write) {
  validate_path(name);
  return layout_of(client).lock(name, read_write);
}

std::string lease_path(const Client& client, const std::string& name) {
  validate_path(name);
  return layout_of(client).lease(name);
}

}  // namespace avout::inspect
