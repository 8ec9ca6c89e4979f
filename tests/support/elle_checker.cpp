#include "support/elle_checker.hpp"

#include "support/dependency_graph.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <unordered_map>

namespace avout::testing::elle {
namespace {

// Edge kinds, as bits so that a search names the kinds it may follow.
constexpr std::uint8_t ww = 1, wr = 2, rw = 4, rt = 8;
using Edge = DependencyGraph::Edge;

std::string edge_name(const Edge& edge) {
  const char* kind = edge.kind == ww   ? "ww"
                     : edge.kind == wr ? "wr"
                     : edge.kind == rw ? "rw"
                                       : "rt";
  return edge.key.empty() ? kind : std::string(kind) + "(" + edge.key + ")";
}

std::string show_list(const std::vector<std::int64_t>& list) {
  std::string text = "[";
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i > 0) text += ",";
    if (list.size() > 16 && i == 4 && list.size() - 8 > i) {  // long lists: head and tail
      text += "...(" + std::to_string(list.size() - 12) + " more)...";
      i = list.size() - 8;
    }
    text += std::to_string(list[i]);
  }
  return text + "]";
}

std::string outcome_name(Outcome outcome) {
  return outcome == Outcome::ok ? "ok" : outcome == Outcome::failed ? "failed" : "info";
}

// The state a whole check shares: the history, its graph and what was reported.
class Checker {
 public:
  Checker(const std::vector<Transaction>& history, const CheckOptions& options)
      : history_(history), options_(options) {
    origin_ = std::numeric_limits<std::int64_t>::max();
    for (const auto& txn : history_) origin_ = std::min(origin_, txn.invoked_ns);
  }

  std::vector<Anomaly> run() {
    index_appends();
    order_versions();
    choose_nodes();
    read_edges();
    write_edges();
    lost_appends();
    if (options_.realtime) realtime_edges();
    cycles();
    return std::move(found_);
  }

 private:
  // One transaction for an explanation.
  std::string show(std::size_t t) const {
    const auto& txn = history_[t];
    auto ms = [&](std::int64_t ns) {
      char text[32];
      std::snprintf(text, sizeof text, "%.3f", static_cast<double>(ns - origin_) / 1e6);
      return std::string(text);
    };
    std::string text = "T" + std::to_string(txn.id) + " (process " + std::to_string(txn.process) +
                       ", thread " + std::to_string(txn.thread) + ", " + outcome_name(txn.outcome) +
                       ", " + ms(txn.invoked_ns) + ".." +
                       (txn.completed_ns == 0 ? std::string("never") : ms(txn.completed_ns)) +
                       " ms)" + (txn.final_read ? " final read" : "") + ":";
    std::size_t shown = 0;
    for (const auto& op : txn.ops) {
      if (++shown > 12) {
        text += " ...";
        break;
      }
      if (op.append)
        text += " append " + op.key + " " + std::to_string(op.value) + ";";
      else
        text += " r " + op.key + " -> " + (op.observed ? show_list(*op.observed) : "?") + ";";
    }
    return text;
  }

  void report(const std::string& kind, std::vector<std::size_t> involved, std::string what) {
    if (count_[kind]++ >= options_.per_kind) return;
    Anomaly anomaly{kind, {}, kind + ": " + std::move(what)};
    for (auto t : involved) {
      anomaly.transactions.push_back(history_[t].id);
      anomaly.explanation += "\n    " + show(t);
    }
    found_.push_back(std::move(anomaly));
  }

  // The transaction that appended `value` to `key`, if any did.
  std::optional<std::size_t> writer_of(const std::string& key, std::int64_t value) const {
    const auto w = writer_.find(value);
    if (w == writer_.end() || w->second.second != key) return std::nullopt;
    return w->second.first;
  }

  // Who appended each value to which key, and each transaction's last append to each key.
  void index_appends() {
    for (std::size_t t = 0; t < history_.size(); ++t) {
      for (const auto& op : history_[t].ops) {
        if (!op.append) continue;
        // Values must be unique for a read to name its writer: a repeat is the workload's bug.
        if (const auto [at, fresh] = writer_.emplace(op.value, std::pair{t, op.key}); !fresh)
          report("duplicate", {at->second.first, t},
                 std::to_string(op.value) + " is appended twice in the history");
        last_append_[{t, op.key}] = op.value;
      }
    }
  }

  // Each key's version order: its longest trusted read. Reads no prefix of it are an
  // "incompatible-order" anomaly and give no edges.
  void order_versions() {
    std::map<std::string, std::pair<std::size_t, const std::vector<std::int64_t>*>> longest;
    for (std::size_t t = 0; t < history_.size(); ++t) {
      if (history_[t].outcome != Outcome::ok) continue;
      for (const auto& op : history_[t].ops) {
        if (op.append || !op.observed) continue;
        auto& best = longest[op.key];
        if (best.second == nullptr || op.observed->size() > best.second->size())
          best = {t, &*op.observed};
      }
    }
    for (const auto& [key, best] : longest) {
      order_[key] = *best.second;
    }
    for (std::size_t t = 0; t < history_.size(); ++t) {
      if (history_[t].outcome != Outcome::ok) continue;
      for (const auto& op : history_[t].ops) {
        if (op.append || !op.observed) continue;
        const auto& order = order_.at(op.key);
        const auto& read = *op.observed;
        std::set<std::int64_t> seen;
        for (auto value : read) {
          if (!seen.insert(value).second)
            report("duplicate", {t},
                   std::to_string(value) + " appears twice in a read of " + op.key + " " +
                       show_list(read));
          const auto w = writer_of(op.key, value);
          if (!w) {
            report("unknown-value", {t},
                   "a read of " + op.key + " holds " + std::to_string(value) +
                       ", which nobody appended to " + op.key);
          } else if (history_[*w].outcome == Outcome::failed) {
            report("G1a", {t, *w},
                   "a read of " + op.key + " observes " + std::to_string(value) +
                       ", appended by a failed transaction");
          } else {
            observed_writers_.insert(*w);
          }
        }
        if (read.size() > order.size() || !std::equal(read.begin(), read.end(), order.begin())) {
          report("incompatible-order", {t, longest.at(op.key).first},
                 "a read of " + op.key + " " + show_list(read) +
                     " is no prefix of its longest read " + show_list(order));
          incompatible_.insert(&op);
        }
      }
    }
  }

  // The graph's nodes: ok transactions, and info ones some trusted read saw an append of.
  void choose_nodes() {
    node_.assign(history_.size(), -1);
    for (std::size_t t = 0; t < history_.size(); ++t) {
      const auto outcome = history_[t].outcome;
      if (outcome == Outcome::ok || (outcome == Outcome::info && observed_writers_.contains(t))) {
        node_[t] = static_cast<int>(txn_of_.size());
        txn_of_.push_back(t);
      }
    }
    graph_ = DependencyGraph(txn_of_.size());
  }

  void add_edge(std::size_t from, std::size_t to, std::uint8_t kind, const std::string& key) {
    if (from == to || node_[from] < 0 || node_[to] < 0) return;
    graph_.add(node_[from], node_[to], kind, key);
  }

  // Per trusted read: internal consistency with the transaction's own earlier micro-ops,
  // G1b, and from the first read of each key its wr and rw edges.
  void read_edges() {
    for (std::size_t t = 0; t < history_.size(); ++t) {
      if (history_[t].outcome != Outcome::ok) continue;
      std::map<std::string, std::vector<std::int64_t>> expected;  // after an earlier read
      std::map<std::string, std::vector<std::int64_t>> own;       // appends before any read
      for (const auto& op : history_[t].ops) {
        if (op.append) {
          if (auto known = expected.find(op.key); known != expected.end())
            known->second.push_back(op.value);
          else
            own[op.key].push_back(op.value);
          continue;
        }
        if (!op.observed) continue;
        const auto& read = *op.observed;
        if (auto known = expected.find(op.key); known != expected.end()) {
          if (known->second != read)
            report("internal", {t},
                   "a read of " + op.key + " gives " + show_list(read) +
                       " where the transaction's own view was " + show_list(known->second));
          known->second = read;
          continue;
        }
        expected[op.key] = read;
        std::vector<std::int64_t> snapshot = read;  // without the transaction's own appends
        const auto& mine = own[op.key];
        if (!mine.empty()) {
          if (read.size() < mine.size() ||
              !std::equal(mine.begin(), mine.end(), read.end() - static_cast<long>(mine.size()))) {
            report("internal", {t},
                   "a read of " + op.key + " gives " + show_list(read) +
                       " without the transaction's own appends " + show_list(mine));
            continue;
          }
          snapshot.resize(read.size() - mine.size());
        }
        if (incompatible_.contains(&op)) continue;
        if (!snapshot.empty()) {
          const auto w = writer_of(op.key, snapshot.back());
          if (w && *w != t && history_[*w].outcome != Outcome::failed) {
            if (last_append_.at({*w, op.key}) != snapshot.back())
              report("G1b", {t, *w},
                     "a read of " + op.key + " ends at " + std::to_string(snapshot.back()) +
                         ", an intermediate append of its transaction");
            add_edge(*w, t, wr, op.key);
          }
        }
        const auto& order = order_.at(op.key);
        if (snapshot.size() < order.size()) {
          if (const auto next = writer_of(op.key, order[snapshot.size()]))
            add_edge(t, *next, rw, op.key);
        }
      }
    }
  }

  // ww: consecutive versions of each key's order written by different transactions.
  void write_edges() {
    for (const auto& [key, order] : order_) {
      for (std::size_t i = 0; i + 1 < order.size(); ++i) {
        const auto a = writer_of(key, order[i]), b = writer_of(key, order[i + 1]);
        if (a && b) add_edge(*a, *b, ww, key);
      }
    }
  }

  // Acknowledged appends missing from a final read of their key.
  void lost_appends() {
    for (std::size_t f = 0; f < history_.size(); ++f) {
      if (!history_[f].final_read || history_[f].outcome != Outcome::ok) continue;
      for (const auto& op : history_[f].ops) {
        if (op.append || !op.observed) continue;
        const std::set<std::int64_t> present(op.observed->begin(), op.observed->end());
        for (std::size_t t = 0; t < history_.size(); ++t) {
          if (history_[t].outcome != Outcome::ok || t == f) continue;
          for (const auto& append : history_[t].ops) {
            if (append.append && append.key == op.key && !present.contains(append.value))
              report("lost", {t, f},
                     "acknowledged append " + std::to_string(append.value) + " to " + op.key +
                         " is missing from the final read");
          }
        }
      }
    }
  }

  // T1 -rt-> T2 when T1 completed before T2 was invoked; only edges from the frontier (the
  // completed transactions no completed one follows yet): the rest follow transitively.
  // A transaction of unknown outcome has no completion: it may land at any later time.
  void realtime_edges() {
    struct Event {
      std::int64_t at;
      bool completes;  // invocations first at equal times: "before" is strict
      int node;
    };
    std::vector<Event> events;
    for (std::size_t n = 0; n < txn_of_.size(); ++n) {
      const auto& txn = history_[txn_of_[n]];
      events.push_back({txn.invoked_ns, false, static_cast<int>(n)});
      if (txn.outcome == Outcome::ok && txn.completed_ns != 0)
        events.push_back({txn.completed_ns, true, static_cast<int>(n)});
    }
    std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
      return a.at != b.at ? a.at < b.at : !a.completes && b.completes;
    });
    std::vector<int> frontier;
    std::vector<std::vector<int>> before(txn_of_.size());
    for (const auto& event : events) {
      const auto n = static_cast<std::size_t>(event.node);
      if (!event.completes) {
        before[n] = frontier;
        for (int from : frontier) graph_.add(from, event.node, rt, "");
        continue;
      }
      std::erase_if(frontier, [&](int f) {
        return std::find(before[n].begin(), before[n].end(), f) != before[n].end();
      });
      frontier.push_back(event.node);
      before[n].clear();
    }
  }

  // A cycle's class by the edges it holds.
  static std::string classify(const std::vector<std::pair<int, Edge>>& cycle) {
    int writes_read = 0, anti = 0, realtime = 0;
    for (const auto& [from, edge] : cycle) {
      writes_read += edge.kind == wr;
      anti += edge.kind == rw;
      realtime += edge.kind == rt;
    }
    const std::string base = anti == 0   ? (writes_read == 0 ? "G0" : "G1c")
                             : anti == 1 ? "G-single"
                                         : "G2";
    return realtime > 0 ? base + "-realtime" : base;
  }

  // Cycles, most severe first, as Elle searches them: per level the components over the
  // level's edges, and in each a cycle through one of its `start` edges closed by the
  // shortest path over `follow` edges. Each class is reported once per set of transactions.
  void cycles() {
    struct Level {
      std::uint8_t component, start, follow;
    };
    std::vector<Level> levels{{ww, ww, ww},
                              {ww | wr, wr, ww | wr},
                              {ww | wr | rw, rw, ww | wr},
                              {ww | wr | rw, rw, ww | wr | rw}};
    if (options_.realtime) {
      levels.push_back({ww | rt, rt, ww | rt});
      levels.push_back({ww | wr | rt, rt, ww | wr | rt});
      levels.push_back({ww | wr | rw | rt, rw, ww | wr | rt});
      levels.push_back({ww | wr | rw | rt, rw | rt, ww | wr | rw | rt});
    }
    std::set<std::pair<std::string, std::vector<int>>> reported;
    for (const auto& level : levels) {
      const auto component = graph_.components(level.component);
      std::map<int, std::size_t> tried;  // per component
      std::set<int> done;
      for (std::size_t u = 0; u < graph_.size(); ++u) {
        const int within = component[u];
        if (within < 0 || done.contains(within)) continue;
        for (const auto& edge : graph_.out(static_cast<int>(u))) {
          if (!(edge.kind & level.start) || component[static_cast<std::size_t>(edge.to)] != within)
            continue;
          if (tried[within]++ >= options_.cycle_budget) break;
          auto steps = graph_.path(edge.to, static_cast<int>(u), level.follow, component);
          if (steps.empty()) continue;
          steps.insert(steps.begin(), {static_cast<int>(u), edge});
          std::vector<int> members;
          for (const auto& step : steps) members.push_back(step.first);
          std::sort(members.begin(), members.end());
          const auto kind = classify(steps);
          if (!reported.insert({kind, members}).second) continue;
          std::string text = "cycle";
          std::vector<std::size_t> involved;
          for (const auto& [from, via] : steps) {
            text += " T" + std::to_string(history_[txn_of_[static_cast<std::size_t>(from)]].id) +
                    " -" + edge_name(via) + "->";
            involved.push_back(txn_of_[static_cast<std::size_t>(from)]);
          }
          text += " T" + std::to_string(history_[involved.front()].id);
          report(kind, involved, text);
          done.insert(within);
          break;
        }
      }
    }
  }

  const std::vector<Transaction>& history_;
  CheckOptions options_;
  std::int64_t origin_ = 0;
  std::vector<Anomaly> found_;
  std::map<std::string, std::size_t> count_;
  std::unordered_map<std::int64_t, std::pair<std::size_t, std::string>> writer_;
  std::map<std::pair<std::size_t, std::string>, std::int64_t> last_append_;
  std::map<std::string, std::vector<std::int64_t>> order_;
  std::set<const MicroOp*> incompatible_;
  std::set<std::size_t> observed_writers_;
  std::vector<int> node_;            // per transaction: its graph node, or -1
  std::vector<std::size_t> txn_of_;  // per node: its transaction
  DependencyGraph graph_{0};
};

}  // namespace

std::vector<Anomaly> check(const std::vector<Transaction>& history, const CheckOptions& options) {
  return Checker(history, options).run();
}

std::set<std::string> kinds(const std::vector<Anomaly>& anomalies) {
  std::set<std::string> found;
  for (const auto& anomaly : anomalies) found.insert(anomaly.kind);
  return found;
}

std::string describe(const std::vector<Anomaly>& anomalies) {
  std::string text;
  for (const auto& anomaly : anomalies) text += anomaly.explanation + "\n";
  return text;
}

std::vector<Transaction> transactions_from(const std::map<std::int64_t, Operation>& operations,
                                           const std::string& f) {
  std::vector<Transaction> history;
  for (const auto& [id, operation] : operations) {
    if (operation.f != f) continue;
    Transaction txn;
    txn.id = id;
    txn.process = process_of(id);
    txn.thread = operation.argument.value("thread", 0);
    txn.final_read = operation.argument.value("final", false);
    txn.invoked_ns = operation.invoked_ns;
    txn.completed_ns = operation.completed_ns;
    txn.outcome = operation.outcome == "ok"     ? Outcome::ok
                  : operation.outcome == "fail" ? Outcome::failed
                                                : Outcome::info;
    const bool filled = txn.outcome == Outcome::ok && operation.result.is_array();
    for (const auto& micro : filled ? operation.result : operation.argument.at("ops")) {
      MicroOp op;
      op.append = micro.at(0) == "append";
      op.key = micro.at(1).get<std::string>();
      if (op.append)
        op.value = micro.at(2).get<std::int64_t>();
      else if (filled && !micro.at(2).is_null())
        op.observed = micro.at(2).get<std::vector<std::int64_t>>();
      txn.ops.push_back(std::move(op));
    }
    history.push_back(std::move(txn));
  }
  return history;
}

}  // namespace avout::testing::elle
