#include "support/checkers.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

namespace avout::testing {
namespace {

// Operation ids are process * this + a per-process counter (the workload's SharedHistory).
constexpr std::int64_t process_id_stride = 1000000;

// One operation for a report: id, process, outcome, argument and result.
std::string show(const Operation& operation) {
  std::string text = "op " + std::to_string(operation.id) + " (process " +
                     std::to_string(operation.id / process_id_stride) + ", " + operation.outcome +
                     ") " + operation.f + " " + operation.argument.dump();
  if (!operation.result.is_null()) text += " -> " + operation.result.dump();
  return text.size() > 600 ? text.substr(0, 600) + "..." : text;
}

std::string show_list(const std::vector<long>& list) { return nlohmann::json(list).dump(); }

bool is_prefix(const std::vector<long>& prefix, const std::vector<long>& of) {
  return prefix.size() <= of.size() && std::equal(prefix.begin(), prefix.end(), of.begin());
}

void duplicates_in(const std::string& what, const std::vector<long>& list,
                   std::vector<std::string>& problems) {
  std::set<long> seen;
  for (long value : list) {
    if (!seen.insert(value).second) {
      problems.push_back("duplicate: " + std::to_string(value) + " appears twice in " + what + " " +
                         show_list(list));
    }
  }
}

// Positions of each value in each final list.
std::map<std::string, std::map<long, std::size_t>> positions(
    const std::map<std::string, std::vector<long>>& lists) {
  std::map<std::string, std::map<long, std::size_t>> at;
  for (const auto& [key, list] : lists) {
    for (std::size_t i = 0; i < list.size(); ++i) at[key].emplace(list[i], i);
  }
  return at;
}

long count_in(const std::vector<long>& list, long value) {
  return static_cast<long>(std::count(list.begin(), list.end(), value));
}

// The dependency graph of list-append transactions.
struct Edge {
  std::int64_t to;
  char kind;  // 'w' ww, 'r' wr, 'a' rw (anti-dependency), 'e' rw from a read the reader ensured
  std::string key;
};
using Graph = std::map<std::int64_t, std::vector<Edge>>;

// Strongly connected components over the edges whose kind is in `kinds` (Tarjan).
std::vector<std::vector<std::int64_t>> components(const Graph& graph, const std::string& kinds) {
  std::map<std::int64_t, int> index, low;
  std::set<std::int64_t> on_stack;
  std::vector<std::int64_t> stack;
  std::vector<std::vector<std::int64_t>> found;
  int next = 0;
  std::function<void(std::int64_t)> visit = [&](std::int64_t node) {
    index[node] = low[node] = next++;
    stack.push_back(node);
    on_stack.insert(node);
    if (auto out = graph.find(node); out != graph.end()) {
      for (const auto& edge : out->second) {
        if (kinds.find(edge.kind) == std::string::npos) continue;
        if (!index.contains(edge.to)) {
          visit(edge.to);
          low[node] = std::min(low[node], low[edge.to]);
        } else if (on_stack.contains(edge.to)) {
          low[node] = std::min(low[node], index[edge.to]);
        }
      }
    }
    if (low[node] == index[node]) {
      std::vector<std::int64_t> component;
      std::int64_t member;
      do {
        member = stack.back();
        stack.pop_back();
        on_stack.erase(member);
        component.push_back(member);
      } while (member != node);
      if (component.size() > 1) found.push_back(std::move(component));
    }
  };
  for (const auto& [node, edges] : graph) {
    if (!index.contains(node)) visit(node);
  }
  return found;
}

// A path from `from` to `to` over edges of `kinds` inside `allowed`, as edges (BFS).
std::optional<std::vector<std::pair<std::int64_t, Edge>>> path(const Graph& graph,
                                                               std::int64_t from, std::int64_t to,
                                                               const std::string& kinds) {
  std::map<std::int64_t, std::pair<std::int64_t, Edge>> parent;
  std::vector<std::int64_t> frontier{from};
  std::set<std::int64_t> seen{from};
  while (!frontier.empty()) {
    std::vector<std::int64_t> next;
    for (auto node : frontier) {
      auto out = graph.find(node);
      if (out == graph.end()) continue;
      for (const auto& edge : out->second) {
        if (kinds.find(edge.kind) == std::string::npos || seen.contains(edge.to)) continue;
        seen.insert(edge.to);
        parent.emplace(edge.to, std::make_pair(node, edge));
        if (edge.to == to) {
          std::vector<std::pair<std::int64_t, Edge>> steps;
          for (auto at = to; at != from;) {
            const auto& [before, via] = parent.at(at);
            steps.push_back({before, via});
            at = before;
          }
          std::reverse(steps.begin(), steps.end());
          return steps;
        }
        next.push_back(edge.to);
      }
    }
    frontier = std::move(next);
  }
  return std::nullopt;
}

std::string edge_name(char kind) {
  return kind == 'w' ? "ww" : kind == 'r' ? "wr" : kind == 'e' ? "rw-ensured" : "rw";
}

std::string show_cycle(const std::string& anomaly,
                       const std::vector<std::pair<std::int64_t, Edge>>& steps,
                       const std::map<std::int64_t, Operation>& operations) {
  std::string text = anomaly + ": cycle ";
  for (const auto& [from, edge] : steps) {
    text += std::to_string(from) + " -" + edge_name(edge.kind) + "(" + edge.key + ")-> ";
  }
  text += std::to_string(steps.front().first);
  for (const auto& [from, edge] : steps) text += "\n    " + show(operations.at(from));
  return text;
}

}  // namespace

std::vector<std::string> check_list_append(
    const std::map<std::int64_t, Operation>& operations,
    const std::map<std::string, std::vector<long>>& final_lists) {
  std::vector<std::string> problems;
  const auto at = positions(final_lists);
  for (const auto& [key, list] : final_lists)
    duplicates_in("the final list of " + key, list, problems);

  // Who appended what, and each transaction's appends per key in order.
  std::map<long, std::int64_t> writer;
  std::map<std::int64_t, std::map<std::string, std::vector<long>>> appends;
  for (const auto& [id, operation] : operations) {
    if (operation.f != "txn") continue;
    for (const auto& micro : operation.argument) {
      if (micro.at(0) != "append") continue;
      const auto key = micro.at(1).get<std::string>();
      const long value = micro.at(2).get<long>();
      writer[value] = id;
      appends[id][key].push_back(value);
    }
  }
  auto present = [&](const std::string& key, long value) {
    auto list = final_lists.find(key);
    return list == final_lists.end() ? 0L : count_in(list->second, value);
  };
  std::set<std::int64_t> committed;  // nodes of the graph: acknowledged, or seen to have landed
  for (const auto& [id, keys] : appends) {
    const auto& operation = operations.at(id);
    for (const auto& [key, values] : keys) {
      for (long value : values) {
        const long times = present(key, value);
        if (operation.outcome == "ok" && times == 0) {
          problems.push_back("lost: acknowledged append " + std::to_string(value) + " to " + key +
                             " is not in the final list\n    " + show(operation));
        }
        if (operation.outcome == "fail" && times > 0) {
          problems.push_back("G1a: append " + std::to_string(value) +
                             " of a failed transaction is in the final list of " + key + "\n    " +
                             show(operation));
        }
        if (times > 0) committed.insert(id);
      }
    }
    if (operation.outcome == "ok") committed.insert(id);
  }

  Graph graph;
  for (auto id : committed) graph[id];
  // ww: consecutive appends of the final lists.
  for (const auto& [key, list] : final_lists) {
    for (std::size_t i = 0; i + 1 < list.size(); ++i) {
      auto a = writer.find(list[i]), b = writer.find(list[i + 1]);
      if (a == writer.end() || b == writer.end()) {
        problems.push_back("unknown value in the final list of " + key + " " + show_list(list));
        break;
      }
      if (a->second != b->second) graph[a->second].push_back({b->second, 'w', key});
    }
  }
  // Reads: internal consistency, prefixes, G1a, G1b, and the wr and rw edges.
  for (const auto& [id, operation] : operations) {
    if (operation.f != "txn" || operation.outcome != "ok") continue;
    std::map<std::string, std::vector<long>> expected;  // what the next read of a key must show
    std::map<std::string, std::vector<long>> own;       // own appends not yet followed by a read
    std::set<std::string> edged;
    for (const auto& micro : operation.result) {
      const auto key = micro.at(1).get<std::string>();
      if (micro.at(0) == "append") {
        const long value = micro.at(2).get<long>();
        if (expected.contains(key)) expected[key].push_back(value);
        own[key].push_back(value);
        continue;
      }
      const auto read = micro.at(2).get<std::vector<long>>();
      duplicates_in("a read of " + key, read, problems);
      if (auto known = expected.find(key); known != expected.end() && known->second != read) {
        problems.push_back("internal: a read of " + key + " gave " + show_list(read) +
                           " where the transaction's own view was " + show_list(known->second) +
                           "\n    " + show(operation));
      }
      // The snapshot part: the read without this transaction's own appends at its end.
      std::vector<long> snapshot = read;
      const auto& mine = own[key];
      if (!expected.contains(key) && !mine.empty()) {
        if (read.size() < mine.size() ||
            !std::equal(mine.begin(), mine.end(), read.end() - static_cast<long>(mine.size()))) {
          problems.push_back("internal: a read of " + key + " gave " + show_list(read) +
                             " without the transaction's own appends " + show_list(mine) +
                             "\n    " + show(operation));
        } else {
          snapshot.resize(read.size() - mine.size());
        }
      }
      expected[key] = read;
      own[key].clear();
      if (edged.contains(key)) continue;
      edged.insert(key);
      const auto final_list = final_lists.count(key) ? final_lists.at(key) : std::vector<long>{};
      if (!is_prefix(snapshot, final_list)) {
        problems.push_back("incompatible order: a read of " + key + " " + show_list(snapshot) +
                           " is no prefix of the final list " + show_list(final_list) + "\n    " +
                           show(operation));
        continue;
      }
      for (long value : snapshot) {
        auto w = writer.find(value);
        if (w != writer.end() && operations.at(w->second).outcome == "fail") {
          problems.push_back("G1a: read of " + std::to_string(value) + " in " + key +
                             " written by a failed transaction\n    " + show(operation) + "\n    " +
                             show(operations.at(w->second)));
        }
      }
      if (!snapshot.empty() && writer.contains(snapshot.back())) {
        const auto w = writer.at(snapshot.back());
        if (w != id) {
          const auto& theirs = appends[w][key];
          if (theirs.back() != snapshot.back()) {
            problems.push_back("G1b: read of " + key + " ends at " +
                               std::to_string(snapshot.back()) +
                               ", an intermediate append of its transaction\n    " +
                               show(operation) + "\n    " + show(operations.at(w)));
          }
          graph[w].push_back({id, 'r', key});
        }
      }
      if (snapshot.size() < final_list.size() && writer.contains(final_list[snapshot.size()])) {
        const auto next = writer.at(final_list[snapshot.size()]);
        // A writer cannot commit over a ref another transaction ensured until that one has
        // committed: an rw edge out of an ensured read orders commits like ww and wr do.
        const bool ensured = micro.size() > 3 && micro.at(3) == "ensure";
        if (next != id) graph[id].push_back({next, ensured ? 'e' : 'a', key});
      }
    }
  }

  // A transaction never meets a value missing under the head that names it (erased by a
  // resolution that judged a landed commit lost, issue 36 item 2).
  for (const auto& [id, operation] : operations) {
    if (operation.f == "txn" && operation.outcome != "ok" && operation.result.is_string() &&
        operation.result.get<std::string>().find("missing from its store") != std::string::npos) {
      problems.push_back("erased: a transaction read a value missing from its store\n    " +
                         show(operation));
    }
    // A wrapped clock is only a clock (issue 36 item 1): no commit is refused for its version.
    if (operation.f == "txn" && operation.outcome != "ok" && operation.result.is_string() &&
        operation.result.get<std::string>().find("/stm/clock: ") != std::string::npos &&
        operation.result.get<std::string>().find("version") != std::string::npos) {
      problems.push_back("clock: a transaction failed at the clock's version\n    " +
                         show(operation));
    }
  }

  // Plain reads outside transactions: a prefix of the final list, never an error about a
  // value the head had moved past.
  for (const auto& [id, operation] : operations) {
    if (operation.f != "ref-read") continue;
    const auto key = operation.argument.at("key").get<std::string>();
    if (operation.outcome == "fail") {
      problems.push_back("plain deref of " + key + " failed although the ref has a value\n    " +
                         show(operation));
    } else if (operation.outcome == "ok") {
      const auto final_list = final_lists.count(key) ? final_lists.at(key) : std::vector<long>{};
      if (!is_prefix(operation.result.get<std::vector<long>>(), final_list)) {
        problems.push_back("incompatible order: a plain deref of " + key +
                           " is no prefix of the final list " + show_list(final_list) + "\n    " +
                           show(operation));
      }
    }
  }

  // Cycles: G0 (ww only), G1c (ww and wr), G-single (one rw and the rest ww/wr).
  int reported = 0;
  for (const auto& component : components(graph, "w")) {
    if (reported++ >= 5) break;
    if (auto steps = path(graph, component[1], component[0], "w")) {
      auto back = path(graph, component[0], component[1], "w");
      steps->insert(steps->end(), back->begin(), back->end());
      problems.push_back(show_cycle("G0", *steps, operations));
    }
  }
  reported = 0;
  for (const auto& component : components(graph, "wr")) {
    if (reported >= 5) break;
    auto steps = path(graph, component[1], component[0], "wr");
    auto back = path(graph, component[0], component[1], "wr");
    if (!steps || !back) continue;
    steps->insert(steps->end(), back->begin(), back->end());
    bool only_ww = std::all_of(steps->begin(), steps->end(),
                               [](const auto& s) { return s.second.kind == 'w'; });
    if (only_ww) continue;  // reported as G0
    ++reported;
    problems.push_back(show_cycle("G1c", *steps, operations));
  }
  reported = 0;
  for (const auto& component : components(graph, "wrae")) {
    const std::set<std::int64_t> members(component.begin(), component.end());
    for (auto from : component) {
      for (const auto& edge : graph.at(from)) {
        if ((edge.kind != 'a' && edge.kind != 'e') || !members.contains(edge.to) || reported >= 5)
          continue;
        if (auto back = path(graph, edge.to, from, "wr")) {
          ++reported;
          std::vector<std::pair<std::int64_t, Edge>> steps{{from, edge}};
          steps.insert(steps.end(), back->begin(), back->end());
          problems.push_back(show_cycle("G-single", steps, operations));
        }
      }
    }
  }
  // G2 where snapshot isolation alone would allow it (write skew), but not between
  // transactions that ensure what they read: a cycle of ww, wr and ensured rw edges with
  // two or more ensured rw edges (one alone is G-single above).
  reported = 0;
  std::set<std::pair<std::int64_t, std::int64_t>> in_reported;
  for (const auto& component : components(graph, "wre")) {
    const std::set<std::int64_t> members(component.begin(), component.end());
    for (auto from : component) {
      for (const auto& edge : graph.at(from)) {
        if (edge.kind != 'e' || !members.contains(edge.to) || reported >= 5) continue;
        if (in_reported.contains({from, edge.to})) continue;  // one cycle, reported once
        if (path(graph, edge.to, from, "wr")) continue;       // reported as G-single
        if (auto back = path(graph, edge.to, from, "wre")) {
          ++reported;
          std::vector<std::pair<std::int64_t, Edge>> steps{{from, edge}};
          steps.insert(steps.end(), back->begin(), back->end());
          for (const auto& [at, via] : steps) in_reported.insert({at, via.to});
          problems.push_back(show_cycle("G2 (ensured reads)", steps, operations));
        }
      }
    }
  }
  return problems;
}

std::vector<std::string> check_atoms(const std::map<std::int64_t, Operation>& operations,
                                     const std::map<std::string, std::vector<long>>& final_lists) {
  std::vector<std::string> problems;
  const auto at = positions(final_lists);
  for (const auto& [key, list] : final_lists)
    duplicates_in("the final value of atom " + key, list, problems);
  // Per atom: (invoked, completed, position or -1 for "seen up to") of acknowledged operations.
  struct Point {
    std::int64_t invoked, completed;
    long after;  // must lie strictly after everything completed before it began
    long marks;  // what it proves committed (its position, or a read's last index)
    const Operation* operation;
  };
  std::map<std::string, std::vector<Point>> timeline;
  for (const auto& [id, operation] : operations) {
    if (operation.f.rfind("atom-", 0) != 0) continue;
    const auto atom = operation.argument.at("atom").get<std::string>();
    const auto& final_list = final_lists.count(atom) ? final_lists.at(atom) : std::vector<long>{};
    if (operation.f == "atom-read") {
      if (operation.outcome != "ok") continue;
      const auto read = operation.result.get<std::vector<long>>();
      if (!is_prefix(read, final_list)) {
        problems.push_back("atom " + atom + ": a read " + show_list(read) +
                           " is no prefix of the final value " + show_list(final_list) + "\n    " +
                           show(operation));
      }
      const long last = static_cast<long>(read.size()) - 1;
      timeline[atom].push_back(
          {operation.invoked_ns, operation.completed_ns, last + 1, last, &operation});
      continue;
    }
    const long value = operation.argument.at("value").get<long>();
    const long times = count_in(final_list, value);
    const bool refused =
        operation.f == "atom-cas" && operation.outcome == "ok" && operation.result == false;
    const bool acknowledged = operation.outcome == "ok" && !refused;
    if (acknowledged && times != 1) {
      problems.push_back("atom " + atom + ": acknowledged append " + std::to_string(value) +
                         " is in the final value " + std::to_string(times) + " times\n    " +
                         show(operation));
    }
    if ((operation.outcome == "fail" || refused) && times != 0) {
      problems.push_back("atom " + atom + ": failed or refused append " + std::to_string(value) +
                         " is in the final value\n    " + show(operation));
    }
    if (operation.outcome == "info" && times > 1) {
      problems.push_back("atom " + atom + ": append " + std::to_string(value) +
                         " of unknown outcome applied " + std::to_string(times) + " times\n    " +
                         show(operation));
    }
    if (operation.f == "atom-append" && acknowledged) {
      const auto seen = operation.result.get<std::vector<long>>();
      if (seen.empty() || seen.back() != value || !is_prefix(seen, final_list)) {
        problems.push_back("atom " + atom + ": swap returned " + show_list(seen) +
                           ", not a prefix of the final value ending with its own append\n    " +
                           show(operation));
      }
    }
    if (acknowledged && times == 1) {
      const long position = static_cast<long>(at.at(atom).at(value));
      timeline[atom].push_back(
          {operation.invoked_ns, operation.completed_ns, position, position, &operation});
    }
  }
  // Real time: whatever completed before an operation began lies before it.
  for (auto& [atom, points] : timeline) {
    auto by_completion = points;
    std::sort(by_completion.begin(), by_completion.end(),
              [](const Point& a, const Point& b) { return a.completed < b.completed; });
    std::sort(points.begin(), points.end(),
              [](const Point& a, const Point& b) { return a.invoked < b.invoked; });
    long highest = -1;
    const Operation* witness = nullptr;
    std::size_t next = 0;
    // Reads may be served by a lagging follower (ZooKeeper's reads are sequentially
    // consistent): a read must only not miss what its own process had completed.
    auto process_highest = [&](const Point& read) {
      long mine = -1;
      for (const auto& other : by_completion) {
        if (other.completed >= read.invoked) break;
        if (other.operation->id / process_id_stride != read.operation->id / process_id_stride ||
            other.marks <= mine)
          continue;
        mine = other.marks;
        witness = other.operation;
      }
      return mine;
    };
    for (const auto& point : points) {
      while (next < by_completion.size() && by_completion[next].completed < point.invoked) {
        if (by_completion[next].marks > highest) {
          highest = by_completion[next].marks;
          witness = by_completion[next].operation;
        }
        ++next;
      }
      if (point.after <= highest && point.operation->f != "atom-read") {
        problems.push_back("atom " + atom + ": not linearizable: an append landed at " +
                           std::to_string(point.after) + " although position " +
                           std::to_string(highest) + " was complete before it began\n    " +
                           show(*point.operation) + "\n    " + show(*witness));
      }
      if (point.operation->f == "atom-read" && point.after <= process_highest(point)) {
        problems.push_back(
            "atom " + atom +
            ": stale read: it misses what its own process had completed before it began\n    " +
            show(*point.operation) + "\n    " + show(*witness));
      }
    }
  }
  return problems;
}

std::vector<std::string> check_locks(const std::map<std::int64_t, Operation>& operations) {
  std::vector<std::string> problems;
  std::map<std::string, std::vector<const Operation*>> holds;
  for (const auto& [id, operation] : operations) {
    if (operation.f == "hold" && operation.outcome == "ok" && operation.result.is_object()) {
      holds[operation.argument.at("lock").get<std::string>()].push_back(&operation);
    }
  }
  for (auto& [lock, list] : holds) {
    std::sort(list.begin(), list.end(), [](const Operation* a, const Operation* b) {
      return a->result.at("entered_ns").get<std::int64_t>() <
             b->result.at("entered_ns").get<std::int64_t>();
    });
    int reported = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const auto& a = *list[i];
      const auto a_left = a.result.at("left_ns").get<std::int64_t>();
      for (std::size_t j = i + 1; j < list.size() && reported < 10; ++j) {
        const auto& b = *list[j];
        const auto b_entered = b.result.at("entered_ns").get<std::int64_t>();
        const bool writes = a.argument.at("side") == "write" || b.argument.at("side") == "write";
        if (b_entered < a_left && writes) {
          ++reported;
          problems.push_back("lock " + lock + ": two holders at once\n    " + show(a) + "\n    " +
                             show(b));
        }
        // Readers may hold together, so two read holds need no order between their tokens;
        // any pair with a write in it must see them increase.
        if (writes && a_left < b_entered &&
            a.result.at("token").get<std::uint64_t>() >=
                b.result.at("token").get<std::uint64_t>()) {
          ++reported;
          problems.push_back("lock " + lock +
                             ": fencing token did not increase from one hold to a later one\n    " +
                             show(a) + "\n    " + show(b));
        }
      }
    }
  }
  return problems;
}

std::vector<std::string> check_counters(const std::map<std::int64_t, Operation>& operations,
                                        const std::map<std::string, long>& final_counts) {
  std::vector<std::string> problems;
  std::map<std::string, long> acknowledged, unknown;
  std::map<std::string, std::map<long, const Operation*>> wrote;
  for (const auto& [id, operation] : operations) {
    if (operation.f != "increment") continue;
    const auto lock = operation.argument.at("lock").get<std::string>();
    if (operation.outcome == "info") ++unknown[lock];
    if (operation.outcome != "ok") continue;
    ++acknowledged[lock];
    const long count = operation.result.at("count").get<long>();
    if (auto [other, fresh] = wrote[lock].emplace(count, &operation); !fresh) {
      problems.push_back("counter of lock " + lock + ": two acknowledged increments both wrote " +
                         std::to_string(count) + " (two holders at once)\n    " +
                         show(*other->second) + "\n    " + show(operation));
    }
  }
  for (const auto& [lock, count] : final_counts) {
    if (count < acknowledged[lock] || count > acknowledged[lock] + unknown[lock]) {
      problems.push_back("counter of lock " + lock + ": final count " + std::to_string(count) +
                         " but " + std::to_string(acknowledged[lock]) + " acknowledged and " +
                         std::to_string(unknown[lock]) + " unknown increments");
    }
  }
  return problems;
}

namespace {

// The agents each process's final await vouched for ({"agent"} argument; an await without
// one, "*", vouches for every agent).
using Vouched = std::map<std::int64_t, std::set<std::string>>;

bool vouches(const Vouched& vouched, std::int64_t process, const std::string& agent) {
  const auto found = vouched.find(process);
  return found != vouched.end() && (found->second.contains(agent) || found->second.contains("*"));
}

// Actions sent to an agent that send to another ("f": "action-send", argument {"agent": the
// target of the inner send, "value", "failed": whether the action throws on purpose}), the
// note a throwing action records before it throws ("f": "action-failed", argument {"value"})
// and the restarts of the agent they fail ("f": "agent-restart", argument {"failed_by": the
// value of the action whose error the restart cleared, or null}).
void check_action_sends(const std::map<std::int64_t, Operation>& operations,
                        const std::map<std::string, std::vector<long>>& final_lists,
                        const Vouched& vouched, std::vector<std::string>& problems) {
  constexpr auto never = std::numeric_limits<std::int64_t>::max();
  // A failed agent drops the actions queued behind the failing one until a restart: a drop
  // window opens when the failing action's send begins and closes when a restart that
  // cleared its error completes (open for good when none did). A restart whose error names
  // no action closes a window of unknown start.
  std::map<long, std::int64_t> cleared;  // failing action's value -> first restart completed
  std::int64_t unnamed_until = 0;
  for (const auto& [id, operation] : operations) {
    if (operation.f != "agent-restart" || operation.outcome != "ok") continue;
    const auto& failed_by = operation.argument.at("failed_by");
    if (failed_by.is_null()) {
      unnamed_until = std::max(unnamed_until, operation.completed_ns);
      continue;
    }
    auto [at, fresh] = cleared.emplace(failed_by.get<long>(), operation.completed_ns);
    if (!fresh) at->second = std::min(at->second, operation.completed_ns);
  }
  // Failed for certain: the error a restart cleared named it. Maybe failed: it threw once,
  // but an outage may have run it again and kept that run's result instead. Only an action
  // that threw can have failed the agent (one dropped behind another never ran).
  std::set<long> known_failed, maybe_failed;
  for (const auto& [id, operation] : operations) {
    if (operation.f == "agent-restart" && !operation.argument.at("failed_by").is_null()) {
      known_failed.insert(operation.argument.at("failed_by").get<long>());
      maybe_failed.insert(operation.argument.at("failed_by").get<long>());
    }
    if (operation.f == "action-failed")
      maybe_failed.insert(operation.argument.at("value").get<long>());
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> windows;
  for (const auto& [id, operation] : operations) {
    if (operation.f != "action-send" || operation.outcome == "fail") continue;
    const long value = operation.argument.at("value").get<long>();
    if (!maybe_failed.contains(value)) continue;
    const auto closed = cleared.find(value);
    windows.emplace_back(operation.invoked_ns, closed == cleared.end() ? never : closed->second);
  }
  for (const auto& [id, operation] : operations) {
    if (operation.f != "action-send") continue;
    const auto agent = operation.argument.at("agent").get<std::string>();
    const long value = operation.argument.at("value").get<long>();
    const long times = final_lists.count(agent) ? count_in(final_lists.at(agent), value) : 0;
    const bool failed = operation.argument.at("failed") == true || known_failed.contains(value);
    if (failed && times != 0) {
      problems.push_back("agent " + agent + ": the send of a failed action ran " +
                         std::to_string(times) + " times\n    " + show(operation));
      continue;
    }
    if (operation.outcome == "fail" && times != 0) {
      problems.push_back("agent " + agent +
                         ": the send of an action whose send was refused ran\n    " +
                         show(operation));
      continue;
    }
    if (times > 1) {
      problems.push_back("agent " + agent + ": the send of an action ran " + std::to_string(times) +
                         " times\n    " + show(operation));
      continue;
    }
    const auto completed = operation.completed_ns == 0 ? never : operation.completed_ns;
    const bool maybe_dropped =
        operation.invoked_ns < unnamed_until ||
        std::any_of(windows.begin(), windows.end(),
                    [&, invoked = operation.invoked_ns](const auto& window) {
                      return completed > window.first && invoked < window.second;
                    });
    // The relay's await shows the action ran; the target's that the send it made ran.
    const auto process = id / process_id_stride;
    const bool must_run = vouches(vouched, process, "relay") && vouches(vouched, process, agent);
    if (!maybe_failed.contains(value) && operation.outcome == "ok" && times == 0 && must_run &&
        !maybe_dropped) {
      problems.push_back("agent " + agent +
                         ": the send of an action that ran and did not fail never ran\n    " +
                         show(operation));
    }
  }
}

}  // namespace

std::vector<std::string> check_agents(const std::map<std::int64_t, Operation>& operations,
                                      const std::map<std::string, std::vector<long>>& final_lists) {
  std::vector<std::string> problems;
  const auto at = positions(final_lists);
  for (const auto& [key, list] : final_lists)
    duplicates_in("the final value of agent " + key, list, problems);
  std::map<std::string, std::vector<const Operation*>> by_thread;  // acknowledged, in order
  // Send nodes are ephemeral: a sender's pending sends vanish with its session (killed, or
  // expired, which its await then reports). Only a process whose final await of an agent
  // returned true vouches that every send to it it acknowledged ran; the others' ran at
  // most once.
  // An await reports a drop once (SessionExpired): a process whose await in the middle of
  // the run ("await-mid") ended in doubt may have been told of drops its final await then
  // did not repeat, so it vouches for nothing of that agent.
  Vouched vouched;
  std::set<std::pair<std::int64_t, std::string>> told;
  for (const auto& [id, operation] : operations) {
    if (operation.f == "await-mid" && operation.outcome == "info") {
      told.emplace(id / process_id_stride, operation.argument.at("agent").get<std::string>());
    }
  }
  for (const auto& [id, operation] : operations) {
    if (operation.f == "await" && operation.outcome == "ok" && operation.result == true) {
      const auto& agent = operation.argument;
      const auto name = agent.is_object() ? agent.at("agent").get<std::string>() : "*";
      if (!told.contains({id / process_id_stride, name}))
        vouched[id / process_id_stride].insert(name);
    }
  }
  check_action_sends(operations, final_lists, vouched, problems);
  for (const auto& [id, operation] : operations) {
    if (operation.f == "await" && operation.outcome == "ok" && operation.result == false) {
      problems.push_back(
          "agent: await timed out with its sends still pending (a stalled queue)\n    " +
          show(operation));
    }
    if (operation.f != "send" && operation.f != "txn-send") continue;
    const auto agent = operation.argument.at("agent").get<std::string>();
    const long value = operation.argument.at("value").get<long>();
    const long times = final_lists.count(agent) ? count_in(final_lists.at(agent), value) : 0;
    const bool must_run = vouches(vouched, id / process_id_stride, agent);
    if (operation.outcome == "ok" && (times > 1 || (times == 0 && must_run))) {
      problems.push_back("agent " + agent + ": acknowledged send " + std::to_string(value) +
                         " ran " + std::to_string(times) + " times\n    " + show(operation));
    }
    if (operation.outcome == "fail" && times != 0) {
      problems.push_back("agent " + agent + ": a send of a failed " +
                         std::string(operation.f == "send" ? "call" : "transaction") +
                         " ran\n    " + show(operation));
    }
    if (operation.outcome == "info" && times > 1) {
      problems.push_back("agent " + agent + ": a send of unknown outcome ran " +
                         std::to_string(times) + " times\n    " + show(operation));
    }
    if (operation.outcome == "ok" && times == 1 && !operation.argument.at("thread").is_null()) {
      by_thread[agent + " thread " + operation.argument.at("thread").dump()].push_back(&operation);
    }
  }
  for (auto& [thread, sends] : by_thread) {
    std::sort(sends.begin(), sends.end(),
              [](const Operation* a, const Operation* b) { return a->invoked_ns < b->invoked_ns; });
    for (std::size_t i = 1; i < sends.size(); ++i) {
      const auto agent = sends[i]->argument.at("agent").get<std::string>();
      const auto& where = at.at(agent);
      if (where.at(sends[i - 1]->argument.at("value").get<long>()) >
          where.at(sends[i]->argument.at("value").get<long>())) {
        problems.push_back("agent " + agent + ": sends of " + thread + " ran out of order\n    " +
                           show(*sends[i - 1]) + "\n    " + show(*sends[i]));
        break;
      }
    }
  }
  return problems;
}

std::vector<std::string> check_watches(
    const std::map<std::int64_t, Operation>& operations,
    const std::map<std::string, std::vector<long>>& final_lists) {
  std::vector<std::string> problems;
  for (const auto& [id, operation] : operations) {
    if (operation.f != "watch-last" || operation.outcome != "ok") continue;
    const auto atom = operation.argument.at("atom").get<std::string>();
    const auto seen = operation.result.get<std::vector<long>>();
    const auto& final_list = final_lists.count(atom) ? final_lists.at(atom) : std::vector<long>{};
    if (seen != final_list) {
      problems.push_back("watch of atom " + atom + " ended on " + show_list(seen) +
                         ", not the final value " + show_list(final_list) + "\n    " +
                         show(operation));
    }
  }
  return problems;
}

std::vector<std::string> check_agent_reads(
    const std::map<std::int64_t, Operation>& operations,
    const std::map<std::string, std::vector<long>>& final_lists) {
  std::vector<std::string> problems;
  int failed_reads = 0;
  const Operation* first_failed = nullptr;
  auto read_failed = [&](const Operation& operation) {
    if (failed_reads++ == 0) first_failed = &operation;
  };
  for (const auto& [id, operation] : operations) {
    const bool read = operation.f == "agent-read" || operation.f == "agent-handle";
    if (read && operation.outcome == "fail") read_failed(operation);
    if (operation.f == "agent-read" && operation.outcome == "ok") {
      const auto agent = operation.argument.at("agent").get<std::string>();
      const auto seen = operation.result.get<std::vector<long>>();
      const auto& final_list =
          final_lists.count(agent) ? final_lists.at(agent) : std::vector<long>{};
      if (!is_prefix(seen, final_list)) {
        problems.push_back("agent " + agent + ": a read " + show_list(seen) +
                           " is no value the agent held (no prefix of " + show_list(final_list) +
                           ")\n    " + show(operation));
      }
    }
    if (operation.f != "await-mid" || operation.outcome != "ok" || !operation.result.is_object())
      continue;
    if (operation.result.contains("read_error")) {
      read_failed(operation);
      continue;
    }
    const auto agent = operation.argument.at("agent").get<std::string>();
    const auto& final_list = final_lists.count(agent) ? final_lists.at(agent) : std::vector<long>{};
    if (operation.result.at("seen").is_null()) continue;  // the read after it failed
    const auto seen = operation.result.at("seen").get<std::vector<long>>();
    const std::set<long> seen_set(seen.begin(), seen.end());
    for (const auto& waited : operation.result.at("waited")) {
      const long value = waited.get<long>();
      if (count_in(final_list, value) > 0 && !seen_set.contains(value)) {
        problems.push_back(
            "agent " + agent + ": await returned before send " + std::to_string(value) +
            ", made before the await began, ran (it ran later)\n    " + show(operation));
        break;
      }
    }
  }
  if (failed_reads > 0) {
    problems.push_back(
        "agent: " + std::to_string(failed_reads) +
        " plain reads (deref, a new handle, set_validator, a read after await) found the value "
        "missing from its store while others sent; the first:\n    " +
        show(*first_failed));
  }
  return problems;
}

std::vector<std::string> check_register(const std::map<std::int64_t, Operation>& operations,
                                        const std::vector<long>& final_value) {
  std::vector<std::string> problems;
  std::set<long> written, failed;
  std::map<long, const Operation*> replaced;
  for (const auto& [id, operation] : operations) {
    if (operation.f != "register-reset") continue;
    const long value = operation.argument.at("value").get<long>();
    if (operation.outcome == "fail")
      failed.insert(value);
    else
      written.insert(value);
  }
  auto known = [&](const std::vector<long>& value, const Operation* by) {
    if (value.empty()) return;
    if (value.size() != 1 || !written.contains(value.front())) {
      problems.push_back(
          "register: value " + show_list(value) + " was set by no reset that could have landed" +
          (by != nullptr ? "\n    " + show(*by) : std::string(" (the final value)")));
    }
  };
  for (const auto& [id, operation] : operations) {
    if (operation.f != "register-reset" || operation.outcome != "ok" ||
        operation.result.at("old").is_null())
      continue;
    const auto old = operation.result.at("old").get<std::vector<long>>();
    known(old, &operation);
    const long key = old.empty() ? -1 : old.front();
    if (auto [other, fresh] = replaced.emplace(key, &operation); !fresh) {
      problems.push_back("register: two resets both replaced " + show_list(old) +
                         " (not linearizable)\n    " + show(*other->second) + "\n    " +
                         show(operation));
    }
  }
  known(final_value, nullptr);
  return problems;
}

std::vector<std::string> check_contracts(const std::map<std::int64_t, Operation>& operations) {
  std::vector<std::string> problems;
  for (const auto& [id, operation] : operations) {
    if (operation.f == "contract" && operation.result.is_object()) {
      problems.push_back("broken promise: " + operation.result.at("broken").get<std::string>() +
                         "\n    " + show(operation));
    }
  }
  return problems;
}

std::vector<std::string> check_claims(const std::vector<ClaimLeft>& claims,
                                      std::chrono::milliseconds after) {
  std::vector<std::string> problems;
  for (const auto& claim : claims) {
    problems.push_back("claim outlived its dosync: " + claim.ref + " still claimed " +
                       std::to_string(after.count()) + " ms after every dosync of process " +
                       std::to_string(claim.process) + " ended (session " +
                       std::to_string(claim.session) + ", first read point " +
                       std::to_string(claim.first_read_point) + ", counter " +
                       std::to_string(claim.counter) + ")");
  }
  return problems;
}

}  // namespace avout::testing
