// The recipes' state as avout::inspect reports it (recipes/recipe_inspection.hpp): each read
// through the sequential-queue engine's listing and the recipe's own node kinds and records.
#include "recipes/recipe_inspection.hpp"
#include "queue/sequential_queue.hpp"
#include "recipes/barrier_names.hpp"
#include "recipes/barrier_round.hpp"
#include "recipes/election_names.hpp"
#include "recipes/semaphore_record.hpp"
#include "recipes/work_queue_items.hpp"

#include <avout/errors.hpp>
#include <avout/zookeeper_tree.hpp>

#include <algorithm>
#include <functional>
#include <future>

namespace avout::detail {

namespace {

// The folder's name below the walked parent of `name` ("/a/b" of "/a/b/c").
std::string parent_of(const std::string& name) { return name.substr(0, name.rfind('/')); }

// The names `pick` finds among the nodes below `parent` (it adds what a node tells), sorted
// and without repeats.
std::vector<std::string> names_below(
    ZooKeeperSession& session, const std::string& parent,
    const std::function<void(const TreeNode&, std::vector<std::string>&)>& pick) {
  std::vector<std::string> names;
  walk_tree(session, parent, [&](const TreeNode& node) { pick(node, names); });
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  names.erase(std::remove(names.begin(), names.end(), std::string()), names.end());
  return names;
}

// A recipe's folder holds its record in its data: any node with data (queue nodes of these
// recipes carry none).
void folders_with_data(const TreeNode& node, std::vector<std::string>& names) {
  if (node.stat.data_length > 0) names.push_back(node.name);
}

// The nodes named in `names` (in that order) below `folder`, as ZooKeeper reports them now
// (one pipelined exists each); a node gone since its listing is left out.
std::vector<inspect::QueuedNode> stats_of(ZooKeeperSession& session, const std::string& folder,
                                          const std::vector<std::string>& names) {
  std::vector<std::future<std::optional<NodeStat>>> replies;
  replies.reserve(names.size());
  for (const auto& name : names) replies.push_back(session.exists_async(folder + "/" + name));
  std::vector<inspect::QueuedNode> nodes;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto stat = session.wait(replies[i]);
    if (!stat) continue;
    nodes.push_back(inspect::QueuedNode{names[i], stat->ephemeral_owner,
                                        static_cast<std::uint64_t>(stat->czxid)});
  }
  return nodes;
}

// The queue of `kind` in `folder`, in order, listed after a sync; nullopt when the folder does
// not exist.
std::optional<std::vector<std::string>> listed(ZooKeeperSession& session, const std::string& folder,
                                               const NodeKind& kind) {
  try {
    return SequentialQueue(session, folder, kind).list(Deadline{});
  } catch (const NoNode&) {
    return std::nullopt;
  }
}

}  // namespace

std::vector<std::string> semaphore_names(ZooKeeperSession& session, const std::string& parent) {
  return names_below(session, parent, folders_with_data);
}

std::vector<std::string> election_names(ZooKeeperSession& session, const std::string& parent) {
  // Candidates carry their id as data and the folder none: a candidate names its folder, and
  // a leaf that is no candidate is an election nobody campaigns in now.
  return names_below(session, parent, [](const TreeNode& node, std::vector<std::string>& names) {
    if (is_queue_node(name_of(node.name), candidate_kind())) {
      names.push_back(parent_of(node.name));
    } else if (node.stat.num_children == 0) {
      names.push_back(node.name);
    }
  });
}

std::vector<std::string> barrier_names(ZooKeeperSession& session, const std::string& parent) {
  return names_below(session, parent, folders_with_data);
}

std::vector<std::string> work_queue_names(ZooKeeperSession& session, const std::string& parent) {
  // Every queue's folder holds the takers' line from its first opening on.
  return names_below(session, parent, [](const TreeNode& node, std::vector<std::string>& names) {
    if (name_of(node.name) == waiters_folder) names.push_back(parent_of(node.name));
  });
}

std::optional<inspect::SemaphoreState> read_semaphore(ZooKeeperSession& session,
                                                      const std::string& folder) {
  std::optional<NodeData> record;
  try {
    record = session.get(folder);
  } catch (const NoNode&) {
    return std::nullopt;
  }
  if (record->data.empty()) return std::nullopt;
  const auto permits = decode_permits(record->data);
  if (!permits) {
    throw CodecError("semaphore " + folder + ": not a permit count: " +
                     std::string(record->data.begin(), record->data.end()));
  }
  const auto line = listed(session, folder, permit_kind());
  if (!line) return std::nullopt;
  inspect::SemaphoreState state{*permits, stats_of(session, folder, *line), {}};
  // The first N hold (HoldRule::first(N)); the rest wait in that order.
  if (state.holders.size() > *permits) {
    const auto split = state.holders.begin() + static_cast<std::ptrdiff_t>(*permits);
    state.waiters.assign(split, state.holders.end());
    state.holders.erase(split, state.holders.end());
  }
  return state;
}

std::optional<inspect::ElectionState> read_election(ZooKeeperSession& session,
                                                    const std::string& folder) {
  const auto line = listed(session, folder, candidate_kind());
  if (!line) return std::nullopt;
  std::vector<std::future<NodeData>> replies;
  for (const auto& name : *line) replies.push_back(session.get_async(folder + "/" + name));
  inspect::ElectionState state;
  for (std::size_t i = 0; i < line->size(); ++i) {
    try {
      const auto node = session.wait(replies[i]);
      state.candidates.push_back(
          inspect::Candidate{std::string(node.data.begin(), node.data.end()),
                             inspect::QueuedNode{(*line)[i], node.stat.ephemeral_owner,
                                                 static_cast<std::uint64_t>(node.stat.czxid)}});
    } catch (const NoNode&) {  // resigned since the listing
    }
  }
  return state;
}

std::optional<inspect::BarrierState> read_barrier(ZooKeeperSession& session,
                                                  const std::string& folder) {
  std::vector<std::string> children;
  BarrierRecord record;
  for (;;) {
    // As the barrier itself looks (BarrierCore::look): the record read before and after the
    // listing at one version means the listing shows the folder while that round stood.
    std::future<void> synced = session.sync_async(folder);
    auto before = session.get_async(folder);
    auto listing = session.children_async(folder);
    auto after = session.get_async(folder);
    NodeData first, second;
    try {
      first = session.wait(before);
      children = session.wait(listing);
      second = session.wait(after);
    } catch (const NoNode&) {
      return std::nullopt;
    }
    session.wait(synced);
    if (first.stat.version != second.stat.version) continue;  // the round changed: again
    if (second.data.empty()) return std::nullopt;
    record = decode_record(second.data, folder);
    break;
  }
  const BarrierRound& round = record.round;
  inspect::BarrierState state{record.participants,  round.number, round.closed,
                              round.previous_broke, {},           {}};
  // Participants queued after the members of a closed round wait for the next one.
  const auto waiting =
      round.closed ? round_line(children, next_round(round, false)) : round_line(children, round);
  state.waiting = stats_of(session, folder, waiting);
  if (!round.closed) return state;
  const auto nodes = stats_of(session, folder, round.members);
  const LeaveView view = judge_leave(round, children);
  const auto among = [](const auto& range, const std::string& name) {
    return std::find(range.begin(), range.end(), name) != range.end();
  };
  for (const auto& member : round.members) {
    inspect::BarrierMember entry{inspect::QueuedNode{member, 0, 0}, "left"};
    for (const auto& node : nodes) {
      if (node.node == member) entry.node = node;
    }
    // Neither inside nor recorded as leaving: gone without its record (the round broke).
    if (among(view.inside, member)) {
      entry.state = "inside";
    } else if (!among(children, left_record(round.number, member))) {
      entry.state = "dead";
    }
    state.members.push_back(std::move(entry));
  }
  return state;
}

std::optional<inspect::WorkQueueState> read_work_queue(ZooKeeperSession& session,
                                                       const std::string& folder) {
  const auto takers = listed(session, folder + "/" + waiters_folder, waiter_kind);
  if (!takers) return std::nullopt;  // no line: no queue was ever opened here
  const auto items = listed(session, folder, item_kind);
  if (!items) return std::nullopt;
  inspect::WorkQueueState state{items->size(), std::nullopt, takers->size()};
  for (const auto& name : *items) {
    try {
      const auto node = session.get(folder + "/" + name);
      state.oldest = inspect::QueueItem{name, node.data, node.stat.ctime};
      break;
    } catch (const NoNode&) {  // taken since the listing: the next is the oldest
      --state.length;
    }
  }
  return state;
}

}  // namespace avout::detail
