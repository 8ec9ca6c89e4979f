#include "inspect.hpp"

#include <avout/detail/agent_core.hpp>
#include <avout/detail/atom_core.hpp>
#include <avout/detail/stm.hpp>
#include <avout/zookeeper_tree.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ostream>

namespace avout::tool {

namespace {

// Object names below `folder`: nodes with data (`with_data`) or leaves otherwise.
void walk(ZooKeeperSession& session, const std::string& folder, bool with_data,
          std::vector<std::string>& names) {
  walk_tree(session, folder, [&](const TreeNode& node) {
    if (with_data ? node.stat.data_length > 0 : node.stat.num_children == 0) {
      names.push_back(node.name);
    }
  });
}

std::string describe_point(ReferenceData& data, const Point& point) {
  try {
    return codec::describe(data.get(point));
  } catch (const MissingPoint&) {
    return "<missing from the store>";
  } catch (const CodecError& error) {
    return std::string("<undecodable: ") + error.what() + ">";
  }
}

NodeData read_or_not_found(ZooKeeperSession& session, const std::string& path,
                           const std::string& what) {
  try {
    return session.get(path);
  } catch (const NoNode&) {
    throw NotFound(what + " does not exist");
  }
}

}  // namespace

std::vector<std::string> list(Client& client, const std::string& kind) {
  auto& session = client.session();
  const std::string root = client.options().root;
  std::vector<std::string> names;
  if (kind == "atoms") {
    walk(session, root + "/atoms", true, names);          // values in ZooKeeper
    walk(session, root + "/atom-notices", false, names);  // values in other stores
  } else if (kind == "refs") {
    walk(session, root + "/stm/refs", true, names);
  } else if (kind == "agents") {
    walk(session, root + "/agents/heads", true, names);
  } else if (kind == "leases") {
    walk(session, root + "/leases", true, names);
  } else if (kind == "locks") {
    // A lock's folder holds "writers" (and, for read-write locks, "readers" and "gates").
    for (const char* folder : {"/locks", "/rwlocks"}) {
      std::vector<std::string> leaves;
      walk(session, root + folder, false, leaves);  // empty queues and waiting nodes
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
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
  } else {
    throw InvalidName("unknown kind '" + kind + "' (atoms, refs, agents, leases, locks)");
  }
  return names;
}

void show_atom(Client&, Store& store, const std::string& name, std::ostream& out) {
  auto state = store.atom_state(name);
  auto stored = state->get();
  if (!stored.exists()) throw NotFound("atom " + name + " does not exist in " + store.description());
  auto envelope = detail::decode_envelope(stored.value, name);
  out << "atom " << name << " in " << store.description() << "\n"
      << "  value:  " << codec::describe(envelope.payload) << "\n"
      << "  writes: " << envelope.sequence << "\n";
}

void show_ref(Client& client, Store& store, const std::string& name, std::ostream& out) {
  const std::string head_path = client.options().root + "/stm/refs" + name;
  auto node = read_or_not_found(client.session(), head_path, "ref " + name);
  auto head = detail::decode_head(node.data, head_path);
  auto data = store.reference_data(client.ref_value_key(name));
  out << "ref " << name << " in " << store.description() << "\n"
      << "  value:   " << describe_point(*data, head.newest) << "\n"
      << "  commit:  zxid " << node.stat.mzxid << ", point " << head.newest.id << "\n"
      << "  history: " << head.history.size() << " of " << head.keep << " kept\n";
  for (const auto& older : head.history) {
    out << "    zxid " << older.zxid << ": " << describe_point(*data, older.point) << "\n";
  }
}

void show_agent(Client& client, Store& store, const std::string& name, std::ostream& out) {
  const std::string root = client.options().root;
  const std::string head_path = root + "/agents/heads" + name;
  auto node = read_or_not_found(client.session(), head_path, "agent " + name);
  auto head = detail::decode_agent_head(node.data, head_path);
  auto data = store.reference_data(client.agent_value_key(name));
  std::size_t queued = 0;
  try {
    queued = client.session().children(root + "/agents/queues" + name).size();
  } catch (const NoNode&) {
  }
  out << "agent " << name << " in " << store.description() << "\n"
      << "  value:  " << describe_point(*data, head.point) << "\n"
      << "  error:  " << (head.error ? *head.error : "none") << "\n"
      << "  queued: " << queued << " sends\n";
}

void show_lock(Client& client, const std::string& name, std::ostream& out) {
  auto& session = client.session();
  const std::string root = client.options().root;
  const bool read_write = session.exists(root + "/rwlocks" + name + "/writers").has_value();
  const std::string base = root + (read_write ? "/rwlocks" : "/locks") + name;
  if (!session.exists(base + "/writers")) throw NotFound("lock " + name + " does not exist");
  auto sorted_children = [&](const std::string& folder) {
    std::vector<std::string> names;
    try {
      names = session.children(folder);
    } catch (const NoNode&) {
    }
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
      return a.substr(a.size() >= 10 ? a.size() - 10 : 0) < b.substr(b.size() >= 10 ? b.size() - 10 : 0);
    });
    return names;
  };
  auto owner = [&](const std::string& path) {
    auto stat = session.exists(path);
    if (!stat) return std::string("gone");
    char text[32];
    std::snprintf(text, sizeof text, "session 0x%llx",
                  static_cast<unsigned long long>(stat->ephemeral_owner));
    return std::string(text);
  };
  const auto writers = sorted_children(base + "/writers");
  out << (read_write ? "read-write lock " : "lock ") << name << "\n";
  // Soft-policy writers close the gate with a node of their own under "gates".
  const bool gate = read_write && !sorted_children(base + "/gates").empty();
  const auto readers = read_write ? sorted_children(base + "/readers") : std::vector<std::string>{};
  for (std::size_t i = 0; i < writers.size(); ++i) {
    // The first writer holds once no reader is inside (soft policies also close the gate).
    const bool holds = i == 0 && (!read_write || gate || readers.empty());
    out << "  " << (holds ? "holder " : "waiter ") << writers[i] << " ("
        << owner(base + "/writers/" + writers[i]) << ")\n";
  }
  if (read_write) {
    for (const auto& reader : readers) {
      out << "  reader " << reader << " (" << owner(base + "/readers/" + reader) << ")\n";
    }
    out << "  gate: " << (gate ? "closed (a soft-policy writer holds)" : "open") << "\n";
  }
  if (writers.empty() && !gate) out << "  free\n";
}

}  // namespace avout::tool
