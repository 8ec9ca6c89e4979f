// Client::gc (rule 9): erases ref values that no head references and whose writer's session
// is dead, and commit markers past their grace period.
#include "stm/transaction.hpp"

#include <avout/client.hpp>
#include <avout/errors.hpp>
#include <avout/zookeeper_tree.hpp>

#include <algorithm>
#include <set>

namespace avout::detail {

namespace {

// Every ref head below `folder` (heads are the nodes with data; their parents are empty).
std::vector<std::string> find_heads(ZooKeeperSession& session, const std::string& folder) {
  std::vector<std::string> names;
  walk_tree(session, folder, [&](const TreeNode& node) {
    if (node.stat.data_length > 0) names.push_back(node.name);
  });
  return names;
}

std::set<std::int64_t> live_sessions(ZooKeeperSession& session, const std::string& folder) {
  std::set<std::int64_t> live;
  for (const auto& child : session.children(folder)) {
    if (auto id = writer_of(child + "-")) live.insert(*id);
  }
  return live;
}

}  // namespace

GarbageReport StmContext::collect_garbage(const std::vector<Store*>& stores,
                                          std::chrono::milliseconds marker_grace) {
  GarbageReport report;
  runtime_.announce_session();
  const std::vector<std::string> names =
      find_heads(runtime_.session(), runtime_.layout().ref_heads());
  for (const auto& name : names) {
    ++report.refs_scanned;
    for (Store* store : stores) {
      auto data = store->reference_data(runtime_.layout().value_key("ref", name));
      // Order matters (rule 9): list the points, then learn after a sync which writers are
      // dead, then read the head. A dead session can never make its points referenced later.
      std::vector<Point> points = data->points();
      if (points.empty()) continue;
      runtime_.session().sync(runtime_.layout().sessions());
      const auto live = live_sessions(runtime_.session(), runtime_.layout().sessions());
      const std::string head_path = runtime_.layout().ref_head(name);
      HeadRecord head;
      try {
        head = decode_head(runtime_.session().get(head_path).data, head_path);
      } catch (const NoNode&) {
        continue;
      } catch (const Deleted&) {
        // A removed ref's tombstone names no point: a dead writer's leftover is garbage.
      }
      std::set<std::string> referenced{head.newest.id};
      for (const auto& older : head.history) referenced.insert(older.point.id);
      for (const auto& point : points) {
        auto writer = writer_of(point.id);
        if (!writer || live.contains(*writer) || referenced.contains(point.id)) continue;
        data->erase(point);
        ++report.points_erased;
      }
    }
  }
  // An owner trusts its marker's absence only within half the deployment's grace of sending
  // its commit (rule 6): no marker younger than that grace goes, judged on one clock,
  // ZooKeeper's own: the mtime of a write made now against the markers' ctimes.
  const auto grace = std::max(marker_grace, runtime_.options().marker_grace);
  const std::int64_t now =
      runtime_.session().set(runtime_.layout().session(runtime_.session().session_id()), {}).mtime;
  for (const auto& child : runtime_.session().children(runtime_.layout().markers())) {
    const std::string path = runtime_.layout().marker(child);
    auto stat = runtime_.session().exists(path);
    if (!stat) continue;
    if (std::chrono::milliseconds(now - stat->ctime) < grace) continue;
    try {
      runtime_.session().remove(path, stat->version);
      ++report.markers_removed;
    } catch (const NoNode&) {
    }
  }
  return report;
}

}  // namespace avout::detail
