#include <avout/errors.hpp>
#include <avout/zookeeper_tree.hpp>

namespace avout {

namespace {

void walk_below(ZooKeeperSession& session, const std::string& folder, const std::string& name,
                const std::function<void(const TreeNode&)>& visit) {
  std::vector<std::string> children;
  try {
    children = session.children(folder);
  } catch (const NoNode&) {
    return;  // gone (or never there): nothing below it
  }
  for (const auto& child : children) {
    TreeNode node{join_path(folder, child), name + "/" + child, {}};
    auto stat = session.exists(node.path);
    if (!stat) continue;
    node.stat = *stat;
    visit(node);
    if (node.stat.num_children > 0) walk_below(session, node.path, node.name, visit);
  }
}

}  // namespace

void walk_tree(ZooKeeperSession& session, const std::string& folder,
               const std::function<void(const TreeNode&)>& visit) {
  walk_below(session, folder, "", visit);
}

}  // namespace avout
