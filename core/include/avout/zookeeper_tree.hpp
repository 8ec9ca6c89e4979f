#pragma once
// Walking a ZooKeeper subtree: the one walker gc and the `avout` tool's listings share.

#include <avout/export.hpp>
#include <avout/zookeeper_session.hpp>

#include <functional>
#include <string>

namespace avout {

/// One node met by walk_tree.
struct TreeNode {
  std::string path;  ///< its absolute path
  std::string name;  ///< its path below the walked folder, starting with '/'
  NodeStat stat;     ///< its stat when it was visited
};

/// Calls `visit` for every node below `folder` (not `folder` itself), each parent before its
/// children. A folder that does not exist is an empty tree; a node deleted while the walk
/// runs is skipped with its subtree. Other errors (ConnectionLoss, NoAuth) pass through.
AVOUT_API void walk_tree(ZooKeeperSession& session, const std::string& folder,
               const std::function<void(const TreeNode&)>& visit);

}  // namespace avout
