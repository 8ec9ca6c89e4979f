#include "locks/lock_removal.hpp"

#include "records/lease_record.hpp"
#include "zk/zookeeper_c.hpp"

#include <avout/errors.hpp>

#include <vector>

namespace avout::detail {

namespace {

std::vector<std::string> children_or_none(ZooKeeperSession& session, const std::string& path) {
  try {
    return session.children(path);
  } catch (const NoNode&) {
    return {};
  }
}

[[noreturn]] void in_use(const std::string& what, const std::string& folder) {
  throw NotEmpty(what + " is held or waited for (" + folder + " has nodes); nothing removed",
                 ZNOTEMPTY, folder);
}

// Removes `path` unless absent; one that became non-empty meanwhile is in use.
void remove_empty(ZooKeeperSession& session, const std::string& what, const std::string& path) {
  try {
    session.remove(path);
  } catch (const NoNode&) {
  } catch (const NotEmpty&) {
    in_use(what, path);
  }
}

// The folder of the object itself: names nested below it keep it.
void remove_folder(ZooKeeperSession& session, const std::string& path) {
  try {
    session.remove(path);
  } catch (const NoNode&) {
  } catch (const NotEmpty&) {
  }
}

}  // namespace

bool remove_lock_nodes(ZooKeeperSession& session, const std::string& what, const std::string& base,
                       bool read_write) {
  std::vector<std::string> folders{base + "/writers"};
  if (read_write) folders.insert(folders.end(), {base + "/readers", base + "/gates"});
  session.sync(base);
  if (!session.exists(folders.front())) return false;
  for (const auto& folder : folders) {
    if (!children_or_none(session, folder).empty()) in_use(what, folder);
  }
  // A contender queueing now makes its folder's removal fail (ZooKeeper removes only empty
  // nodes): then it is in use, and what went already is made again by its next opener.
  for (const auto& folder : folders) remove_empty(session, what, folder);
  remove_folder(session, base);
  return true;
}

bool remove_lease_nodes(ZooKeeperSession& session, const std::string& what,
                        const std::string& base) {
  session.sync(base);
  if (!session.exists(base)) return false;
  const auto keys = children_or_none(session, base);
  std::vector<std::pair<std::string, std::int32_t>> free;
  for (const auto& key : keys) {
    const std::string path = base + "/" + key;
    NodeData node;
    try {
      node = session.get(path);
    } catch (const NoNode&) {
      continue;
    }
    if (node.data.empty()) continue;  // the folder of a nested lease lock's name
    if (decode_lease_record(node.data, path).held) in_use(what, path);
    free.emplace_back(path, node.stat.version);
  }
  for (const auto& [path, version] : free) {
    try {
      session.remove(path, version);  // an acquire since then changes it: in use
    } catch (const NoNode&) {
    } catch (const BadVersion&) {
      in_use(what, path);
    } catch (const NotEmpty&) {
      // It also holds a nested lease lock's keys: its record stays with them.
    }
  }
  remove_folder(session, base);
  return true;
}

}  // namespace avout::detail
