// The Elle-style checker (support/elle_checker.hpp) over hand-built histories: each anomaly
// class is found and named, valid serial and concurrent histories give none; and two
// randomized properties: a serial execution over a simulated store never yields an anomaly,
// a simulated snapshot-isolation execution yields write skew (G2) and nothing stronger.
#include "support/dependency_graph.hpp"
#include "support/elle_checker.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>

// A failed CHECK of kinds shows them.
template <>
struct doctest::StringMaker<std::set<std::string>> {
  static doctest::String convert(const std::set<std::string>& kinds) {
    std::string text = "{";
    for (const auto& kind : kinds) text += (text.size() > 1 ? ", " : "") + kind;
    return (text + "}").c_str();
  }
};

namespace {

using avout::testing::elle::check;
using avout::testing::elle::CheckOptions;
using avout::testing::elle::describe;
using avout::testing::elle::kinds;
using avout::testing::elle::MicroOp;
using avout::testing::elle::Outcome;
using avout::testing::elle::Transaction;
using List = std::vector<std::int64_t>;
using Kinds = std::set<std::string>;

MicroOp append(const std::string& key, std::int64_t value) {
  return {.append = true, .key = key, .value = value, .observed = std::nullopt};
}
MicroOp read(const std::string& key, List observed) {
  return {.append = false, .key = key, .value = 0, .observed = std::move(observed)};
}
// A read whose list a simulated execution fills in.
MicroOp planned_read(const std::string& key) {
  return {.append = false, .key = key, .value = 0, .observed = std::nullopt};
}

// A transaction from `invoked` to `completed` (ns; 0: never completed).
Transaction txn(std::int64_t id, std::int64_t invoked, std::int64_t completed,
                std::vector<MicroOp> ops, Outcome outcome = Outcome::ok) {
  return {.id = id,
          .process = static_cast<int>(id % 3),
          .thread = static_cast<int>(id % 2),
          .invoked_ns = invoked,
          .completed_ns = completed,
          .outcome = outcome,
          .ops = std::move(ops),
          .final_read = false};
}
// One that overlaps every other of the hand-built histories: no real-time edges.
Transaction concurrent(std::int64_t id, std::vector<MicroOp> ops, Outcome outcome = Outcome::ok) {
  return txn(id, 0, 1000, std::move(ops), outcome);
}
Transaction final_read(std::int64_t id, std::int64_t at, std::vector<MicroOp> ops) {
  auto made = txn(id, at, at + 10, std::move(ops));
  made.final_read = true;
  return made;
}

Kinds found(const std::vector<Transaction>& history, const CheckOptions& options = {}) {
  return kinds(check(history, options));
}

}  // namespace

TEST_CASE("a serial history and a concurrent valid one give no anomaly") {
  CHECK(found({txn(1, 0, 10, {append("x", 1), append("y", 10)}),
               txn(2, 20, 30, {read("x", {1}), append("x", 2), read("x", {1, 2})}),
               txn(3, 40, 50, {read("y", {10}), append("y", 11)}),
               final_read(4, 60, {read("x", {1, 2}), read("y", {10, 11})})})
            .empty());
  // Overlapping transactions, serializable in the order 2, 1, 3 though 1 was invoked first.
  CHECK(found({txn(1, 0, 50, {read("x", {2}), append("y", 10)}), txn(2, 10, 20, {append("x", 2)}),
               txn(3, 30, 60, {read("y", {10}), read("x", {2}), append("x", 3)}),
               final_read(4, 70, {read("x", {2, 3}), read("y", {10})})})
            .empty());
}

TEST_CASE("G0: write cycles") {
  const auto kinds = found({concurrent(1, {append("x", 1), append("y", 2)}),
                            concurrent(2, {append("x", 3), append("y", 4)}),
                            concurrent(3, {read("x", {1, 3}), read("y", {4, 2})})});
  CHECK(kinds == Kinds{"G0"});
}

TEST_CASE("G1c: write-read cycles") {
  CHECK(found({concurrent(1, {append("x", 1), read("y", {2})}),
               concurrent(2, {append("y", 2), read("x", {1})})}) == Kinds{"G1c"});
}

TEST_CASE("G-single: one anti-dependency closes the cycle (read skew)") {
  const auto anomalies =
      check({concurrent(1, {read("x", {}), read("y", {2})}),
             concurrent(2, {append("x", 1), append("y", 2)}), concurrent(3, {read("x", {1})})});
  CHECK(kinds(anomalies) == Kinds{"G-single"});
  REQUIRE(anomalies.size() == 1);
  CHECK(anomalies[0].transactions.size() == 2);
  CHECK(anomalies[0].explanation.find("T1 -rw(x)-> T2 -wr(y)-> T1") != std::string::npos);
  CHECK(anomalies[0].explanation.find("process 2, thread 0") != std::string::npos);
}

TEST_CASE("G2: write skew") {
  CHECK(found({concurrent(1, {read("x", {}), read("y", {}), append("x", 1)}),
               concurrent(2, {read("x", {}), read("y", {}), append("y", 2)}),
               final_read(3, 2000, {read("x", {1}), read("y", {2})})}) == Kinds{"G2"});
}

TEST_CASE("G1a, G1b, internal inconsistency") {
  CHECK(found({concurrent(1, {append("x", 1)}, Outcome::failed),
               concurrent(2, {read("x", {1})})}) == Kinds{"G1a"});
  // Reading an intermediate state also closes a cycle: 2 -rw-> 1 -wr-> 2.
  const auto intermediate =
      found({concurrent(1, {append("x", 1), append("x", 2)}), concurrent(2, {read("x", {1})}),
             concurrent(3, {read("x", {1, 2})})});
  CHECK(intermediate.contains("G1b"));
  CHECK(found({concurrent(1, {append("x", 1), read("x", {})})}) == Kinds{"internal"});
  CHECK(found({concurrent(1, {read("x", {}), append("x", 1), read("x", {})})}) ==
        Kinds{"internal"});
}

TEST_CASE("incompatible orders, duplicates, unknown values, lost appends") {
  CHECK(found({concurrent(1, {append("x", 1)}), concurrent(2, {append("x", 2)}),
               concurrent(3, {read("x", {1})}), concurrent(4, {read("x", {2})})}) ==
        Kinds{"incompatible-order"});
  CHECK(found({concurrent(1, {append("x", 1)}), concurrent(2, {read("x", {1, 1})})}) ==
        Kinds{"duplicate"});
  CHECK(found({concurrent(2, {read("x", {7})})}) == Kinds{"unknown-value"});
  CHECK(found({concurrent(1, {append("y", 7)}), concurrent(2, {read("x", {7})})}) ==
        Kinds{"unknown-value"});
  CHECK(found({concurrent(1, {append("x", 1)}), concurrent(2, {append("y", 1)})}) ==
        Kinds{"duplicate"});
  // Lost only with a final read: without one, nothing says a read should have seen it.
  CHECK(found({txn(1, 0, 10, {append("x", 1)}), final_read(2, 20, {read("x", {})})}) ==
        Kinds{"lost"});
  CHECK(found({txn(1, 0, 10, {append("x", 1)}), txn(2, 0, 30, {read("x", {})})}).empty());
}

TEST_CASE("transactions of unknown outcome are nodes only when their appends were seen") {
  CHECK(found({txn(1, 0, 0, {append("x", 1)}, Outcome::info), txn(2, 0, 10, {append("x", 2)}),
               final_read(3, 20, {read("x", {2, 1})})})
            .empty());
  CHECK(found({txn(1, 0, 10, {append("x", 1)}, Outcome::info), final_read(2, 20, {read("x", {})})})
            .empty());
  // Seen, it joins the graph: here it closes a write cycle with a transaction it followed.
  CHECK(found({txn(1, 0, 10, {append("x", 1), append("y", 3)}, Outcome::info),
               txn(2, 0, 10, {append("x", 2), append("y", 4)}),
               final_read(3, 20, {read("x", {1, 2}), read("y", {4, 3})})}) == Kinds{"G0"});
}

TEST_CASE("real-time edges: stale reads and write orders against real time") {
  // A read invoked after an append completed misses it: serializable, not strictly.
  const std::vector<Transaction> stale{txn(1, 0, 10, {append("x", 1)}),
                                       txn(2, 20, 30, {read("x", {})}),
                                       final_read(3, 40, {read("x", {1})})};
  CHECK(found(stale) == Kinds{"G-single-realtime"});
  CHECK(found(stale, {.realtime = false}).empty());
  // Two appends in real-time order land the other way round.
  CHECK(found({txn(1, 0, 10, {append("x", 1)}), txn(2, 20, 30, {append("x", 2)}),
               final_read(3, 40, {read("x", {2, 1})})}) == Kinds{"G0-realtime"});
  // A transaction of unknown outcome may land any time after its invocation.
  CHECK(found({txn(1, 0, 10, {append("x", 1)}, Outcome::info), txn(2, 20, 30, {append("x", 2)}),
               final_read(3, 40, {read("x", {2, 1})})})
            .empty());
}

namespace {

// Random list-append transactions over `keys` keys, executed by a simulated store.
struct Simulation {
  std::mt19937_64 random;
  int keys;
  std::int64_t next_value = 1;

  std::vector<MicroOp> plan() {
    std::vector<MicroOp> ops;
    const int size = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < size; ++i) {
      const auto key = "k" + std::to_string(random() % static_cast<std::uint64_t>(keys));
      ops.push_back(random() % 2 ? append(key, next_value++) : planned_read(key));
    }
    return ops;
  }
  // Runs `ops` against `state` (reads see the transaction's own appends).
  static void run(std::vector<MicroOp>& ops, std::map<std::string, List>& state) {
    for (auto& op : ops) {
      if (op.append)
        state[op.key].push_back(op.value);
      else
        op.observed = state[op.key];
    }
  }
};

Transaction final_state(std::int64_t id, std::int64_t at, std::map<std::string, List> state,
                        int keys) {
  std::vector<MicroOp> ops;
  for (int k = 0; k < keys; ++k)
    ops.push_back(read("k" + std::to_string(k), state["k" + std::to_string(k)]));
  return final_read(id, at, std::move(ops));
}

}  // namespace

TEST_CASE("property: serial executions with overlapping intervals never show an anomaly") {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    // The last seed: 20000 transactions over 200 keys, the size of a long randomized run.
    const int count = seed == 5 ? 20000 : 1500;
    const int keys = seed == 5 ? 200 : 4;
    Simulation simulation{std::mt19937_64{seed}, keys};
    std::map<std::string, List> state;
    std::vector<Transaction> history;
    for (int i = 1; i <= count; ++i) {
      // Each commits at 100 * i, inside an interval around it: real time agrees with the order.
      const std::int64_t at = 100 * i;
      auto made = txn(i, at - static_cast<std::int64_t>(simulation.random() % 400),
                      at + static_cast<std::int64_t>(simulation.random() % 400), simulation.plan());
      const auto fate = simulation.random() % 20;
      if (fate == 0) {  // aborted: nothing of it lands, its reads are not reported
        made.outcome = Outcome::failed;
      } else {
        auto state_after = state;
        Simulation::run(made.ops, state_after);
        state = std::move(state_after);
        if (fate == 1) {  // landed, but its client heard nothing
          made.outcome = Outcome::info;
          made.completed_ns = simulation.random() % 2 ? 0 : made.completed_ns;
        }
      }
      if (made.outcome != Outcome::ok) {
        for (auto& op : made.ops) op.observed.reset();
      }
      history.push_back(std::move(made));
    }
    history.push_back(final_state(count + 1, 100 * (count + 10), state, keys));
    const auto anomalies = check(history);
    CHECK_MESSAGE(anomalies.empty(), "seed " << seed << ":\n" << describe(anomalies));
  }
}

TEST_CASE("property: snapshot isolation shows write skew (G2) and nothing stronger") {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    std::mt19937_64 random{seed};
    const int keys = 3, count = 1500;
    // Each transaction reads two keys and appends to one of them (write skew's shape) or
    // runs a random plan; it reads the snapshot of its invocation and commits at its
    // completion unless a key it appends to was committed since its snapshot (first
    // committer wins).
    Simulation simulation{std::mt19937_64{seed * 7}, keys};
    struct Running {
      std::size_t txn;
      std::map<std::string, List> snapshot;
    };
    std::vector<Transaction> history;
    for (int i = 1; i <= count; ++i) {
      const std::int64_t invoked = 10 * i;
      const std::int64_t completed = invoked + 1 + static_cast<std::int64_t>(random() % 60);
      std::vector<MicroOp> ops;
      if (random() % 2) {
        const int a = static_cast<int>(random() % keys), b = (a + 1) % keys;
        ops = {planned_read("k" + std::to_string(a)), planned_read("k" + std::to_string(b)),
               append("k" + std::to_string(random() % 2 ? a : b), simulation.next_value++)};
      } else {
        ops = simulation.plan();
      }
      history.push_back(txn(i, invoked, completed, std::move(ops)));
    }
    struct Event {
      std::int64_t at;
      bool commit;
      std::size_t txn;
    };
    std::vector<Event> events;
    for (std::size_t t = 0; t < history.size(); ++t) {
      events.push_back({history[t].invoked_ns, false, t});
      events.push_back({history[t].completed_ns, true, t});
    }
    std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
      return a.at != b.at ? a.at < b.at : a.commit && !b.commit;  // commits first: strict SI
    });
    std::map<std::string, List> state;
    std::map<std::string, std::int64_t> committed_at;
    for (const auto& event : events) {
      auto& made = history[event.txn];
      if (!event.commit) {
        auto snapshot = state;
        Simulation::run(made.ops, snapshot);  // reads from the snapshot and its own appends
        continue;
      }
      bool conflict = false;
      for (const auto& op : made.ops)
        conflict = conflict || (op.append && committed_at[op.key] > made.invoked_ns);
      if (conflict) {
        made.outcome = Outcome::failed;
        for (auto& op : made.ops) op.observed.reset();
        continue;
      }
      for (const auto& op : made.ops) {
        if (!op.append) continue;
        state[op.key].push_back(op.value);
        committed_at[op.key] = event.at;
      }
    }
    history.push_back(final_state(count + 1, 10 * (count + 100), state, keys));
    const auto anomalies = check(history);
    const auto seen = kinds(anomalies);
    CHECK_MESSAGE((seen.contains("G2") || seen.contains("G2-realtime")),
                  "seed " << seed << ": no write skew found");
    for (const auto& kind : seen) {
      CHECK_MESSAGE((kind == "G2" || kind == "G2-realtime"), "seed " << seed << ":\n"
                                                                     << describe(anomalies));
    }
  }
}

TEST_CASE("transactions come from paired history events: outcomes, threads, reads, final reads") {
  using nlohmann::json;
  const json plan =
      json::array({json::array({"append", "x", 30}), json::array({"r", "y", nullptr})});
  const std::vector<json> events{
      {{"process", 3},
       {"type", "invoke"},
       {"f", "txn"},
       {"id", 3000001},
       {"time_ns", 100},
       {"value", {{"thread", 2}, {"ops", plan}}}},
      {{"process", 3},
       {"type", "ok"},
       {"f", "txn"},
       {"id", 3000001},
       {"time_ns", 200},
       {"value", json::array({json::array({"append", "x", 30}),
                              json::array({"r", "y", json::array({4, 5})})})}},
      {{"process", 1},
       {"type", "invoke"},
       {"f", "txn"},
       {"id", 1000007},
       {"time_ns", 150},
       {"value", {{"thread", 0}, {"ops", plan}}}},
      {{"process", 1},
       {"type", "fail"},
       {"f", "txn"},
       {"id", 1000007},
       {"time_ns", 250},
       {"value", "aborted"}},
      {{"process", 4},
       {"type", "invoke"},
       {"f", "txn"},
       {"id", 4000000},
       {"time_ns", 300},
       {"value", {{"thread", 0}, {"ops", plan}, {"final", true}}}},  // its process died
      {{"process", 4},
       {"type", "invoke"},
       {"f", "other"},
       {"id", 4000001},
       {"time_ns", 300},
       {"value", nullptr}}};
  const auto history =
      avout::testing::elle::transactions_from(avout::testing::pair_operations(events));
  REQUIRE(history.size() == 3);
  const auto& failed = history[0];
  CHECK(failed.id == 1000007);
  CHECK(failed.process == 1);
  CHECK(failed.outcome == Outcome::failed);
  CHECK(!failed.ops[1].observed);
  const auto& ok = history[1];
  CHECK(ok.process == 3);
  CHECK(ok.thread == 2);
  CHECK(ok.invoked_ns == 100);
  CHECK(ok.completed_ns == 200);
  CHECK(ok.outcome == Outcome::ok);
  CHECK(ok.ops[0].append);
  CHECK(ok.ops[0].value == 30);
  CHECK(ok.ops[1].observed == List{4, 5});
  const auto& unknown = history[2];
  CHECK(unknown.outcome == Outcome::info);
  CHECK(unknown.completed_ns == 0);
  CHECK(unknown.final_read);
}

TEST_CASE("dependency graphs: components over some kinds of edge, shortest paths inside one") {
  avout::testing::DependencyGraph graph(5);
  graph.add(0, 1, 1, "x");
  graph.add(1, 2, 1, "x");
  graph.add(2, 0, 2, "y");  // closes 0 -> 1 -> 2 -> 0 only when kind 2 counts
  graph.add(1, 0, 4, "z");  // a shortcut back, of a third kind
  graph.add(3, 4, 1, "x");
  const auto over_one = graph.components(1);
  CHECK(std::count(over_one.begin(), over_one.end(), -1) == 5);
  const auto over_two = graph.components(1 | 2);
  CHECK(over_two[0] >= 0);
  CHECK(over_two[0] == over_two[1]);
  CHECK(over_two[1] == over_two[2]);
  CHECK(over_two[3] == -1);
  CHECK(over_two[4] == -1);
  const auto steps = graph.path(1, 0, 1 | 2, over_two);
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].first == 1);
  CHECK(steps[1].second.key == "y");
  const auto all = graph.components(1 | 2 | 4);
  CHECK(graph.path(1, 0, 1 | 2 | 4, all).size() == 1);  // the shortcut
  CHECK(graph.path(3, 4, 1, all).empty());              // 3 is on no cycle
}
