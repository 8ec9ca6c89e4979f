// The randomized recipe workload (issue 38): client processes of several threads each run
// random operations on the recipes — permits of two semaphores (N=1 and N=2) held a while,
// confirmed by is_held() and by commits guarded by them (each semaphore's appending to a
// ledger ref), some from a thread the permit was moved to; leaderships of one election, each
// confirmed by is_leader() and by guarded commits appending to a ledger ref, and leader()
// read from every thread; double barriers of 2 and 3 participants; items put into a work
// queue inside dosync (some aborted) and outside it, and taken inside dosync together with
// a write to a ledger ref of the taker (in ZooKeeper, Redis or PostgreSQL), some pausing
// mid-item — while faults are injected at the ZooKeeper border (support/zookeeper_faults.hpp:
// lost replies, failures before sending, session expiries, delays) and by a nemesis: SIGSTOP
// of a process past its session timeout and SIGKILL of a process (one started in its place),
// mostly of one holding a permit or leading. Every process records its history; after the
// run the parent drains the queue and the checkers of support/recipe_checkers.hpp judge the
// merged histories (tests/PROMISES.md). Every run prints its seed; the environment selects:
//   AVOUT_SEED=<n>            replay one seed (default: the seeds below)
//   AVOUT_RUN_SECONDS=<n>     length of each seed's run (default 12)
//   AVOUT_PROCESSES=<n>, AVOUT_THREADS=<n>   client processes (4) and threads in each (3)
//   AVOUT_NEMESIS=kill,freeze the process faults
//   AVOUT_ZK_FAULTS=lost=..,early=..,expire=..,delay=..   (or "off")
//   AVOUT_KEEP_HISTORIES=1    keep the histories of a passing run too
// A seed fixes each thread's choices and the nemesis schedule, not the timing.
#include <avout/avout.hpp>

#include "support/history.hpp"
#include "support/processes.hpp"
#include "support/recipe_checkers.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;
namespace fs = std::filesystem;

namespace {

using List = std::vector<long>;

constexpr int most_processes = 12;  // the first ones and those started in place of killed ones
constexpr int drain_process = 99;   // the parent's history, draining the queue after the run
constexpr auto session_timeout = 2000ms;

std::string environment(const char* name, const std::string& otherwise) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : otherwise;
}

// What one seed's run does: made in the parent, inherited by the children.
struct Run {
  std::uint64_t seed = 0;
  std::chrono::seconds length{12};
  int processes = 4;
  int threads = 3;
  std::set<std::string> nemesis;
  avout::testing::ZooKeeperFaultRates faults;
  std::string prefix;  // every name of the run is below it
  fs::path directory;  // histories/ and the marker files

  fs::path histories() const { return directory / "histories"; }
  fs::path marker(const std::string& what, int index) const {
    return directory / (what + "-" + std::to_string(index));
  }
  // The name of the ref a taker's committed takes append their items to.
  std::string ledger(int process, int thread) const {
    return "taken-" + std::to_string(process) + "-" + std::to_string(thread);
  }
};

Run run_for(std::uint64_t seed) {
  Run run;
  run.seed = seed;
  run.length = std::chrono::seconds(std::stoi(environment("AVOUT_RUN_SECONDS", "12")));
  run.processes = std::stoi(environment("AVOUT_PROCESSES", "4"));
  run.threads = std::stoi(environment("AVOUT_THREADS", "3"));
  std::stringstream nemesis(environment("AVOUT_NEMESIS", "kill,freeze"));
  for (std::string word; std::getline(nemesis, word, ',');) {
    if (!word.empty()) run.nemesis.insert(word);
  }
  run.faults = avout::testing::zookeeper_fault_rates_from_env(
      {.reply_lost = 0.03, .fail_early = 0.02, .expire = 0.002, .delay = 0.03});
  run.prefix = avout::testing::unique_name("/random-recipes", std::to_string(seed));
  static std::mt19937_64 random{std::random_device{}()};
  run.directory = fs::temp_directory_path() / ("avout-recipes-" + std::to_string(seed) + "-" +
                                               std::to_string(random() % 100000));
  fs::create_directories(run.histories());
  return run;
}

// Thrown by a body on purpose: its dosync commits nothing.
struct Abort : std::runtime_error {
  Abort() : std::runtime_error("aborted on purpose") {}
};

using History = avout::testing::SharedHistory;

// Runs `call`, recording invoke and outcome: what certainly did not take effect "fail" (a
// deadline, a hold found lost, a broken barrier, an abort: the headers promise nothing is left
// of them), anything else "info" (in doubt).
template <typename Call>
void attempt(History& history, const std::string& f, std::int64_t id,
             const nlohmann::json& argument, Call&& call) {
  history.record("invoke", f, id, argument);
  try {
    history.record("ok", f, id, call());
  } catch (const Abort& error) {
    history.record("fail", f, id, error.what());
  } catch (const avout::Timeout& error) {
    history.record("fail", f, id, error.what());
  } catch (const avout::LockLost& error) {
    history.record("fail", f, id, error.what());
  } catch (const avout::BarrierBroken& error) {
    history.record("fail", f, id, error.what());
  } catch (const avout::RetryLimitExceeded& error) {
    history.record("fail", f, id, error.what());
  } catch (const std::exception& error) {
    history.record("info", f, id, error.what());
    std::this_thread::sleep_for(20ms);
  }
}

// One process's client, stores and recipes.
struct Node {
  avout::testing::ThreeStores stores{session_timeout};
  avout::Client& client = stores.client;
  avout::Semaphore one, two;  // N=1 and N=2
  avout::WorkQueue<long> queue;
  avout::Ref<List> leader_ledger;  // the guarded commits' op ids, in commit order
  // Each semaphore's guarded commits' op ids, in commit order; what a put in dosync also writes.
  avout::Ref<List> permit_ledger_one, permit_ledger_two;
  avout::Ref<long> puts;
  std::mutex holding_mutex;
  int holding = 0;  // permits and leaderships this process holds now

  explicit Node(const Run& run)
      : one(client.semaphore(run.prefix + "/s1", 1)),
        two(client.semaphore(run.prefix + "/s2", 2)),
        queue(client.work_queue<long>(run.prefix + "/q")),
        leader_ledger(client.ref<List>(run.prefix + "/leader-ledger", {}, stores.redis)),
        permit_ledger_one(client.ref<List>(run.prefix + "/permit-ledger-s1", {}, stores.postgres)),
        permit_ledger_two(client.ref<List>(run.prefix + "/permit-ledger-s2", {}, stores.postgres)),
        puts(client.ref<long>(run.prefix + "/puts", 0, stores.postgres)) {}

  // Marks this process as holding a permit or a leadership (marker "holding-<index>", the
  // nemesis's preferred victim) from the first grant until the last release.
  void held(const Run& run, int index, bool more) {
    std::lock_guard lock(holding_mutex);
    holding += more ? 1 : -1;
    if (holding == 0)
      fs::remove(run.marker("holding", index));
    else if (more && holding == 1)
      std::ofstream(run.marker("holding", index)).put('\n');
  }

  avout::Ref<List> ledger(const Run& run, int process, int thread) {
    return client.ref<List>(run.prefix + "/" + run.ledger(process, thread), {},
                            stores.store(process + thread));
  }
};

std::chrono::milliseconds pause(std::mt19937_64& random, int most) {
  return std::chrono::milliseconds(random() % static_cast<std::uint64_t>(most));
}

// `rounds` checks of a permit held under `token`: is_held() or a commit guarded by it.
void use_permit(Node& node, History& history, std::mt19937_64& random, avout::Permit& permit,
                const std::string& sem, std::uint64_t token, int rounds) {
  // A token of 0: not confirmed held (a stall unconfirmed yet): nothing to check under it.
  for (int round = 0; token != 0 && round < rounds; ++round) {
    std::this_thread::sleep_for(pause(random, 150));
    const nlohmann::json which = {{"sem", sem}, {"token", token}};
    if (random() % 2 == 0) {
      attempt(history, "permit-held", history.next_id(), which,
              [&] { return nlohmann::json(permit.is_held()); });
    } else {
      const auto id = history.next_id();
      auto& ledger = sem == "s2" ? node.permit_ledger_two : node.permit_ledger_one;
      attempt(history, "permit-commit", id, which, [&] {
        node.client.dosync(guarded_by(permit), [&] {
          ledger.alter([id](List list) {
            list.push_back(static_cast<long>(id));
            return list;
          });
        });
        return nlohmann::json(nullptr);
      });
    }
  }
}

// A permit of one of the semaphores, held a while, confirmed by is_held() and guarded commits.
void hold_permit(const Run& run, Node& node, History& history, std::mt19937_64& random, int index) {
  const bool two = random() % 2 == 0;
  const std::string sem = two ? "s2" : "s1";
  auto& semaphore = two ? node.two : node.one;
  const int how = static_cast<int>(random() % 3);
  const int rounds = static_cast<int>(random() % 4);
  // A permit is no thread's: some are used and released by a thread they were moved to.
  const bool elsewhere = random() % 4 == 0;
  std::optional<avout::Permit> permit;
  std::uint64_t token = 0;
  attempt(history, "acquire", history.next_id(), {{"sem", sem}, {"n", two ? 2 : 1}, {"how", how}},
          [&]() -> nlohmann::json {
            if (how == 0) permit.emplace(semaphore.acquire(avout::Deadline::after(800ms)));
            if (how == 1) permit = semaphore.try_acquire();
            if (how == 2) permit = semaphore.try_acquire_for(500ms);
            if (!permit) return nullptr;
            node.held(run, index, true);
            token = permit->fencing_token();
            return {{"token", token}};
          });
  if (!permit) return;
  auto use = [&](avout::Permit& held) {
    use_permit(node, history, random, held, sem, token, rounds);
    node.held(run, index, false);
    held.release();
  };
  if (elsewhere)
    std::thread([&, moved = std::move(*permit)]() mutable { use(moved); }).join();
  else
    use(*permit);
}

// A leadership, confirmed by is_leader() and by guarded commits appending to the ledger; a
// leadership is no thread's either.
void lead(const Run& run, Node& node, History& history, std::mt19937_64& random,
          avout::LeaderElection& election, int index) {
  const int rounds = static_cast<int>(random() % 4);
  const bool elsewhere = random() % 4 == 0;  // some checked and resigned by another thread
  bool leading = false;
  std::uint64_t token = 0;
  attempt(history, "campaign", history.next_id(), {{"candidate", election.id()}},
          [&]() -> nlohmann::json {
            election.campaign(avout::Deadline::after(1s));
            leading = true;
            node.held(run, index, true);
            token = election.fencing_token();
            return {{"token", token}};
          });
  auto use = [&] {
    for (int round = 0; leading && token != 0 && round < rounds; ++round) {
      std::this_thread::sleep_for(pause(random, 150));
      const auto id = history.next_id();
      if (random() % 2 == 0) {
        attempt(history, "leading", id, {{"token", token}},
                [&] { return nlohmann::json(election.is_leader()); });
      } else {
        attempt(history, "leader-commit", id, {{"token", token}}, [&] {
          node.client.dosync(guarded_by(election), [&] {
            node.leader_ledger.alter([id](List list) {
              list.push_back(static_cast<long>(id));
              return list;
            });
          });
          return nlohmann::json(nullptr);
        });
      }
    }
    if (leading) node.held(run, index, false);
    try {
      election.resign();  // also after a campaign in doubt: nothing of it is left queued
    } catch (const avout::Error&) {
    }
  };
  if (elsewhere)
    std::thread(use).join();
  else
    use();
}

// One participant's round of a barrier: enter, then leave.
void meet(const Run& run, Node& node, History& history, std::mt19937_64& random) {
  const int n = random() % 2 == 0 ? 2 : 3;
  const auto stay = pause(random, 50);
  const std::string name = "b" + std::to_string(n);
  std::optional<avout::Barrier> barrier;
  try {
    barrier.emplace(node.client.barrier(run.prefix + "/" + name, static_cast<std::size_t>(n)));
  } catch (const avout::Error&) {  // opening it met a fault: no attempt
    return;
  }
  const auto id = history.next_id();
  bool entered = false;
  attempt(history, "enter", id, {{"barrier", name}, {"n", n}}, [&] {
    barrier->enter(avout::Deadline::after(1500ms));
    entered = true;
    return nlohmann::json(nullptr);
  });
  if (!entered) return;
  std::this_thread::sleep_for(stay);
  attempt(history, "leave", history.next_id(), {{"barrier", name}, {"n", n}, {"attempt", id}}, [&] {
    barrier->leave(avout::Deadline::after(3s));
    return nlohmann::json(nullptr);
  });
}

// Puts an item (its operation's id): outside dosync, or inside one, some aborted.
void put(Node& node, History& history, std::mt19937_64& random) {
  const int how = static_cast<int>(random() % 3);
  const bool abort = how > 0 && random() % 6 == 0;
  const auto id = history.next_id();
  attempt(history, "put", id, {{"item", id}, {"how", how}, {"abort", abort}}, [&] {
    const long item = static_cast<long>(id);
    if (how == 0) {
      node.queue.put(item);
    } else {
      node.client.dosync([&] {
        node.queue.put(item);
        if (how == 2) node.puts.commute([](long n) { return n + 1; });
        if (abort) throw Abort();
      });
    }
    return nlohmann::json(nullptr);
  });
}

// Takes an item inside dosync with the append to this thread's ledger, pausing mid-item (a
// SIGKILL then lands inside the take); some aborted.
void take(Node& node, History& history, std::mt19937_64& random, avout::Ref<List>& ledger,
          const std::string& ledger_name) {
  const bool abort = random() % 8 == 0;
  const auto mid_item = pause(random, 80);
  attempt(history, "take", history.next_id(), {{"ledger", ledger_name}, {"abort", abort}}, [&] {
    const auto item = node.client.dosync([&] {
      auto got = node.queue.take(avout::Deadline::after(400ms));
      if (got) {
        std::this_thread::sleep_for(mid_item);
        ledger.alter([&](List list) {
          list.push_back(*got);
          return list;
        });
        if (abort) throw Abort();
      }
      return got;
    });
    return item ? nlohmann::json(*item) : nlohmann::json(nullptr);
  });
}

std::mt19937_64 thread_choices(std::uint64_t seed, int process, int thread) {
  std::seed_seq sequence{seed, static_cast<std::uint64_t>(process),
                         static_cast<std::uint64_t>(thread)};
  return std::mt19937_64(sequence);
}

// The body of one client process.
void run_client(const Run& run, int index) {
  avout::testing::FaultPlan plan(run.seed * 1000 + static_cast<std::uint64_t>(index), run.faults,
                                 avout::testing::shared_zookeeper().connect_string());
  avout::testing::FaultPlan::enable(false);
  History history((run.histories() / std::to_string(index)).string(), index);
  std::unique_ptr<Node> node;
  while (!node) {
    try {
      node = std::make_unique<Node>(run);
    } catch (const avout::Error&) {
      std::this_thread::sleep_for(200ms);
    }
  }
  std::vector<avout::LeaderElection> elections;
  std::vector<avout::Ref<List>> ledgers;
  for (int thread = 0; thread < run.threads; ++thread) {
    elections.push_back(node->client.leader_election(
        run.prefix + "/e", "p" + std::to_string(index) + "-t" + std::to_string(thread)));
    ledgers.push_back(node->ledger(run, index, thread));
  }
  avout::testing::FaultPlan::enable(true);
  // The injected expiries, for the checkers: the injector ends the session from outside while
  // the client's connection may look alive, so the client may go on believing in its holds
  // until it hears of it, up to two thirds of a session timeout (a real expiry comes only
  // after the server stopped hearing from the client, which the client sees first). Each is
  // recorded with the last moment the count was seen unchanged: the expiry came after it.
  std::atomic<bool> done{false};
  std::thread expiries([&] {
    auto seen = avout::testing::FaultPlan::counts().expired;
    auto unchanged_ns = avout::testing::monotonic_ns();
    while (!done) {
      const auto now = avout::testing::monotonic_ns();
      const auto expired = avout::testing::FaultPlan::counts().expired;
      if (expired != seen) {
        const auto id = history.next_id();
        history.record("invoke", "expiry", id, {{"after_ns", unchanged_ns}});
        history.record("ok", "expiry", id);
        seen = expired;
      }
      unchanged_ns = now;
      std::this_thread::sleep_for(2ms);
    }
  });
  std::vector<std::thread> workers;
  for (int thread = 0; thread < run.threads; ++thread) {
    workers.emplace_back([&, thread] {
      auto random = thread_choices(run.seed, index, thread);
      auto& election = elections[static_cast<std::size_t>(thread)];
      while (!fs::exists(run.directory / "stop")) {
        switch (random() % 9) {
          case 0:
          case 1: hold_permit(run, *node, history, random, index); break;
          case 2: lead(run, *node, history, random, election, index); break;
          case 3:
            attempt(history, "leader-read", history.next_id(), nlohmann::json::object(), [&] {
              const auto leader = election.leader();
              return leader ? nlohmann::json(*leader) : nlohmann::json(nullptr);
            });
            break;
          case 4: meet(run, *node, history, random); break;
          case 5:
          case 6: put(*node, history, random); break;
          default:
            take(*node, history, random, ledgers[static_cast<std::size_t>(thread)],
                 run.ledger(index, thread));
        }
      }
    });
  }
  for (auto& worker : workers) worker.join();
  done = true;
  expiries.join();
  avout::testing::FaultPlan::enable(false);
  std::printf("  process %d: %s\n", index,
              avout::testing::describe(avout::testing::FaultPlan::counts()).c_str());
  std::fflush(stdout);
}

// After the run, without faults: the parent takes every item left (recorded as takes of its
// own, with their ledger), then reads every ledger. Returns the takers' ledgers by name; the
// election's and the semaphores' (by "s1", "s2") in `leader_ledger` and `permit_ledgers`.
std::map<std::string, List> drain_and_read(const Run& run, int processes, List& leader_ledger,
                                           std::map<std::string, List>& permit_ledgers,
                                           std::vector<std::string>& problems) {
  avout::testing::ThreeStores stores(4000ms);
  auto queue = stores.client.work_queue<long>(run.prefix + "/q");
  History history((run.histories() / "drain").string(), drain_process);
  const std::string drained = "taken-drain";
  auto ledger = stores.client.ref<List>(run.prefix + "/" + drained, {}, stores.redis);
  // Until a take finds the queue empty; one that threw (no faults here) looks again.
  for (int takes = 0; takes < 100000; ++takes) {
    bool empty = false;
    attempt(history, "take", history.next_id(), {{"ledger", drained}}, [&] {
      const auto item = stores.client.dosync([&] {
        auto got = queue.try_take();
        if (got)
          ledger.alter([&](List list) {
            list.push_back(*got);
            return list;
          });
        return got;
      });
      empty = !item;
      return item ? nlohmann::json(*item) : nlohmann::json(nullptr);
    });
    if (empty) break;
  }
  if (const auto left = queue.size(); left != 0)
    problems.push_back("work queue: " + std::to_string(left) + " items left after the drain");
  std::map<std::string, List> ledgers{{drained, ledger.deref()}};
  for (int process = 0; process < processes; ++process) {
    for (int thread = 0; thread < run.threads; ++thread) {
      ledgers[run.ledger(process, thread)] =
          stores.client
              .ref<List>(run.prefix + "/" + run.ledger(process, thread), {},
                         stores.store(process + thread))
              .deref();
    }
  }
  leader_ledger = stores.client.ref<List>(run.prefix + "/leader-ledger", {}, stores.redis).deref();
  for (const std::string sem : {"s1", "s2"}) {
    permit_ledgers[sem] =
        stores.client.ref<List>(run.prefix + "/permit-ledger-" + sem, {}, stores.postgres).deref();
  }
  return ledgers;
}

// Runs one seed: processes, nemesis, checks. Returns the problems found.
std::vector<std::string> run_seed(const Run& run) {
  std::mt19937_64 random(run.seed);
  const std::string describe_run =
      "seed " + std::to_string(run.seed) + " (AVOUT_SEED=" + std::to_string(run.seed) +
      "), zookeeper faults " + describe(run.faults) + ", histories in " + run.directory.string();
  std::printf("randomized recipe workload: %s\n", describe_run.c_str());
  std::fflush(stdout);
  std::map<int, std::unique_ptr<avout::testing::ChildProcess>> children;
  auto start = [&](int index) {
    children[index] =
        std::make_unique<avout::testing::ChildProcess>(index, [&](int i) { run_client(run, i); });
  };
  for (int i = 0; i < run.processes; ++i) start(i);
  int next_index = run.processes;
  const std::vector<std::string> nemesis(run.nemesis.begin(), run.nemesis.end());
  const auto end = std::chrono::steady_clock::now() + run.length;
  while (std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1000 + random() % 1500));
    if (nemesis.empty() || std::chrono::steady_clock::now() >= end) continue;
    const auto& fault = nemesis[random() % nemesis.size()];
    std::vector<int> live, holding;
    for (const auto& [index, child] : children) {
      live.push_back(index);
      if (fs::exists(run.marker("holding", index))) holding.push_back(index);
    }
    const bool at_holder = !holding.empty() && random() % 4 != 0;
    const int victim =
        at_holder ? holding[random() % holding.size()] : live[random() % live.size()];
    const char* what = at_holder ? " (holding a permit or leading)" : "";
    if (fault == "kill" && next_index < most_processes) {
      std::printf("  nemesis: SIGKILL process %d%s\n", victim, what);
      children.at(victim)->signal(SIGKILL);
      children.at(victim)->wait(scaled(10s));
      children.erase(victim);
      fs::remove(run.marker("holding", victim));
      start(next_index++);
    } else if (fault == "freeze") {
      std::printf("  nemesis: SIGSTOP process %d%s\n", victim, what);
      children.at(victim)->signal(SIGSTOP);
      std::this_thread::sleep_for(session_timeout + 2500ms);
      children.at(victim)->signal(SIGCONT);
    }
    std::fflush(stdout);
  }
  std::ofstream(run.directory / "stop").put('\n');
  std::vector<std::string> problems;
  for (auto& [index, child] : children) {
    try {
      if (const int code = child->wait(scaled(90s)); code != 0)
        problems.push_back("process " + std::to_string(index) + " exited with " +
                           std::to_string(code));
    } catch (const std::runtime_error&) {
      problems.push_back("process " + std::to_string(index) + " did not stop within 90 s");
    }
  }
  children.clear();

  List leader_ledger;
  std::map<std::string, List> permit_ledgers;
  const auto ledgers = drain_and_read(run, next_index, leader_ledger, permit_ledgers, problems);
  const auto operations =
      avout::testing::pair_operations(avout::testing::read_histories(run.histories().string()));
  std::map<std::string, int> counts;
  for (const auto& [id, operation] : operations) counts[operation.f + " " + operation.outcome]++;
  std::string summary;
  for (const auto& [what, count] : counts) summary += " " + what + "=" + std::to_string(count);
  std::size_t taken = 0;
  for (const auto& [name, items] : ledgers) taken += items.size();
  std::printf(
      "  operations:%s\n  ledgers: %zu leader commits, %zu and %zu permit commits (N=1, "
      "N=2), %zu items taken\n",
      summary.c_str(), leader_ledger.size(), permit_ledgers["s1"].size(),
      permit_ledgers["s2"].size(), taken);
  auto add = [&](std::vector<std::string> found) {
    problems.insert(problems.end(), found.begin(), found.end());
  };
  add(avout::testing::check_permits(operations, permit_ledgers));
  add(avout::testing::check_leaders(operations, leader_ledger));
  add(avout::testing::check_barriers(operations));
  add(avout::testing::check_work_queue(operations, ledgers));
  if (!problems.empty()) {
    std::printf("ANOMALIES for %s:\n", describe_run.c_str());
    for (const auto& problem : problems) std::printf("  %s\n", problem.c_str());
  }
  if (!problems.empty() || std::getenv("AVOUT_KEEP_HISTORIES") != nullptr)
    std::printf("  histories kept in %s\n", run.directory.c_str());
  else
    fs::remove_all(run.directory);
  std::fflush(stdout);
  return problems;
}

std::vector<std::uint64_t> seeds() {
  if (const char* seed = std::getenv("AVOUT_SEED")) return {std::stoull(seed)};
  return {1, 2};
}

}  // namespace

TEST_CASE("randomized recipe workloads under injected faults show no anomaly for any seed") {
  avout::testing::start_shared_servers();  // before any fork: children only connect
  for (const auto seed : seeds()) {
    const auto problems = run_seed(run_for(seed));
    CHECK_MESSAGE(problems.empty(),
                  "seed " << seed << ": " << problems.size() << " anomalies (see above)");
  }
}
