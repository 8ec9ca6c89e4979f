// The contended bank in alternating rounds. etcd's peer runs its 8 clients as goroutines of one
// process, so avout runs in that shape too (8 clients on 8 threads), with the 8 threads sharing
// one client, and as 8 processes of a client each; every shape on the peers' 20 accounts, on
// 200 (less contention), and as transactions that read 100 refs and write one of them (the
// reads a serializable commit checks: what read checks cost when others write). Each round
// measures every row once, one after another; the machine's drift between rounds then moves
// the rows of one round together. Per operation, over all rounds: ZooKeeper requests by kind,
// round trips, failed multis, retries by cause, and the CPU of the clients and of the server
// (operation_costs.hpp).
#include "external_peers.hpp"
#include "operation_costs.hpp"
#include "sleep_tally.hpp"
#include "workloads.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <thread>

namespace avout::bench {

namespace {

constexpr int clients_in_bank = 8;

// One transaction over one client's handles to a table's refs, drawing from `random`.
using Transaction = std::function<void(Client&, std::vector<Ref<long>>&, std::mt19937&)>;

// One table of the rounds: its refs, the transaction every row runs on them, and the etcd
// peer's flags for the same workload.
struct Shape {
  std::string title;   // what the table's header says of its refs
  std::string suffix;  // after its rows' names ("" for the peers' bank: the rows as they were)
  int refs;
  std::string store;  // where the refs' values live (a store_urls name)
  std::string unit;   // what an operation is called: transfers, transactions
  std::string etcd_arguments;
  Transaction run;
};

// The bank's transfer between two different accounts.
void bank_transfer(Client& client, std::vector<Ref<long>>& refs, std::mt19937& random) {
  const auto size = refs.size();
  const std::size_t from = random() % size, to = (from + 1 + random() % (size - 1)) % size;
  transfer(client, refs[from], refs[to]);
}

// Reads every ref and adds 1 to one of them, the same one in every attempt.
void read_all_write_one(Client& client, std::vector<Ref<long>>& refs, std::mt19937& random) {
  auto& written = refs[random() % refs.size()];
  (void)client.dosync([&] {
    long sum = 0;
    for (auto& ref : refs) sum += ref.deref();
    written.alter([](long v) { return v + 1; });
    return sum;
  });
}

std::vector<Shape> shapes() {
  const std::string bank_flags = "-bank-only -accounts ";
  return {{std::to_string(bank_accounts) + " Redis accounts", "", bank_accounts, "redis",
           "transfers", bank_flags + std::to_string(bank_accounts), bank_transfer},
          {"200 Redis accounts", ", 200 accounts", 200, "redis", "transfers", bank_flags + "200",
           bank_transfer},
          {"100 ZooKeeper refs, each transaction reads all of them and adds 1 to one",
           ", reads 100, writes 1", 100, "zookeeper", "transactions", "-contended-reads-only",
           read_all_write_one}};
}

// True when the row `name` belongs to the table of `shape` among `tables`: its name ends in
// the shape's suffix, or for the table without one, in no other table's.
bool belongs(const std::string& name, const Shape& shape, const std::vector<Shape>& tables) {
  auto ends_in = [&](const std::string& suffix) {
    return name.size() >= suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (!shape.suffix.empty()) return ends_in(shape.suffix);
  return std::none_of(tables.begin(), tables.end(), [&](const Shape& other) {
    return !other.suffix.empty() && ends_in(other.suffix);
  });
}

// Each row's operations per second, round by round.
using Rounds = std::map<std::string, std::vector<double>>;

// `width`: the column of row names (44, or the longest name of its table).
void print_ratios(const Rounds& rounds, const std::string& mine, const std::string& theirs,
                  int width) {
  const auto a = rounds.find(mine), b = rounds.find(theirs);
  if (a == rounds.end() || b == rounds.end()) return;
  std::vector<double> each;
  int higher = 0;
  for (std::size_t r = 0; r < a->second.size() && r < b->second.size(); ++r) {
    each.push_back(a->second[r] / b->second[r]);
    if (a->second[r] > b->second[r]) ++higher;
  }
  if (each.empty()) return;
  std::printf("  %-*s / %-*s %5.2f [%4.2f, %4.2f]  higher in %d of %zu\n", width, mine.c_str(),
              std::max(30, width - 14), theirs.c_str(), median(each),
              *std::min_element(each.begin(), each.end()),
              *std::max_element(each.begin(), each.end()), higher, each.size());
}

// The refs named prefix/0..count-1, values 1000 in `store`, as `stores`' client holds them.
std::vector<Ref<long>> make_refs(Stores& stores, const std::string& prefix, int count,
                                 const std::string& store) {
  std::vector<Ref<long>> refs;
  for (int i = 0; i < count; ++i)
    refs.push_back(
        stores.client.ref<long>(prefix + "/" + std::to_string(i), 1000, stores.store(store)));
  return refs;
}

// The process shape: 8 processes, a client each (with its own metrics sink), `per_process`
// operations each on the refs under `prefix`. Returns the operations per second over the
// window from the first start to the last end; adds the window's costs to `costs`, the
// server's CPU from the first process's start to the last one's end.
double in_processes(const Servers& servers, const std::string& name, const Shape& shape,
                    const std::string& prefix, int per_process, int server_pid, Costs& costs) {
  struct Window {
    Costs costs;
    double server_at_start, server_at_end;  // the server's CPU readings (ms)
  };
  const std::size_t bytes = sizeof(Window) * clients_in_bank;
  void* shared = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) throw std::runtime_error("mmap failed");
  auto* windows = static_cast<Window*>(shared);
  const Result row = run_processes(name, clients_in_bank, [&](int index) {
    auto metrics = std::make_shared<PrometheusMetrics>();
    Stores own(servers, metrics);
    auto refs = make_refs(own, prefix, shape.refs, shape.store);
    // Heads cached before the window, as the threaded rows' long-lived clients have them.
    (void)own.client.dosync([&] {
      long sum = 0;
      for (auto& ref : refs) sum += ref.deref();
      return sum;
    });
    std::mt19937 random(static_cast<unsigned>(index) + 300);
    wait_for_all_processes();
    const CostSources sources{{&own.client}, metrics.get(), server_pid};
    const Costs before = read_costs(sources);
    ProcessReport report;
    report.started_ms = steady_ms();
    report.latencies_ms = time_each(per_process, [&] { shape.run(own.client, refs, random); });
    report.finished_ms = steady_ms();
    const Costs after = read_costs(sources);
    windows[index] = Window{after - before, before.server_cpu_ms, after.server_cpu_ms};
    windows[index].costs.operations = per_process;
    return report;
  });
  Costs all;
  double server_start = windows[0].server_at_start, server_end = windows[0].server_at_end;
  for (int i = 0; i < clients_in_bank; ++i) {
    all += windows[i].costs;
    server_start = std::min(server_start, windows[i].server_at_start);
    server_end = std::max(server_end, windows[i].server_at_end);
  }
  all.server_cpu_ms = server_end - server_start;
  costs += all;
  munmap(shared, bytes);
  return row.operations_per_second;
}

// etcd's costs per operation, from the peer's row (per-operation figures: one round weighs
// one; its retries are all conflicts).
Costs peer_costs(const PeerRow& peer) {
  Costs costs;
  costs.operations = 1;
  costs.client_cpu_ms = peer.client_cpu_ms;
  costs.server_cpu_ms = peer.server_cpu_ms;
  costs.retries[0] = peer.result.retries;
  return costs;
}

}  // namespace

Result threaded_operations(const std::string& workload, const std::vector<Stores*>& clients,
                           int threads, int per_thread,
                           const std::function<void(std::size_t, std::mt19937&)>& operation) {
  struct Totals {
    std::uint64_t requests = 0, round_trips = 0, retries = 0;
  };
  auto totals = [&] {
    Totals sum;
    for (Stores* each : clients) {
      const auto now = each->client.session().statistics();
      sum.requests += now.requests;
      sum.round_trips += now.round_trips;
      sum.retries += each->client.transaction_counts().second;
    }
    return sum;
  };
  std::vector<std::vector<double>> latencies(static_cast<std::size_t>(threads));
  std::vector<std::thread> running;
  const auto before = totals();
  const auto slept_before = slept_ns();
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&, t] {
      const std::size_t c = static_cast<std::size_t>(t) % clients.size();
      std::mt19937 own(static_cast<unsigned>(t) + 200);
      latencies[static_cast<std::size_t>(t)] = time_each(per_thread, [&] { operation(c, own); });
    });
  }
  for (auto& thread : running) thread.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto after = totals();
  std::vector<double> all;
  for (const auto& each : latencies) all.insert(all.end(), each.begin(), each.end());
  Result row = summarize(workload, all);
  const auto operations = static_cast<double>(all.size());
  row.operations_per_second = operations / seconds;
  row.zookeeper_requests = static_cast<double>(after.requests - before.requests) / operations;
  row.zookeeper_round_trips =
      static_cast<double>(after.round_trips - before.round_trips) / operations;
  row.retries = static_cast<double>(after.retries - before.retries) / operations;
  row.slept_ms = static_cast<double>(slept_ns() - slept_before) / 1e6 / operations;
  return row;
}

Result threaded_bank(const std::string& workload, const std::vector<Stores*>& clients,
                     std::vector<std::vector<Ref<long>>>& accounts, int threads, int per_thread,
                     const std::function<std::pair<int, int>(std::mt19937&)>& pick) {
  return threaded_operations(
      workload, clients, threads, per_thread, [&](std::size_t c, std::mt19937& random) {
        auto [from, to] = pick(random);
        transfer(clients[c]->client, accounts[c][static_cast<std::size_t>(from)],
                 accounts[c][static_cast<std::size_t>(to)]);
      });
}

void run_bank_rounds(const Settings& settings, const Servers& servers, const EtcdPeer* etcd) {
  const int rounds = settings.quick ? 2 : 5;
  const int per_thread = settings.iterations(200);
  // The ZooKeeper server's process, when it runs on this machine: its CPU per operation.
  const int server_pid = listening_pid(first_port(servers.zookeeper));
  auto metrics = std::make_shared<PrometheusMetrics>();  // the threaded rows' clients share it
  std::vector<std::unique_ptr<Stores>> owned;
  std::vector<Stores*> clients;
  for (int c = 0; c < clients_in_bank; ++c) {
    owned.push_back(std::make_unique<Stores>(servers, metrics));
    clients.push_back(owned.back().get());
  }
  const std::vector<Shape> tables = shapes();
  std::vector<std::string> prefixes;
  std::vector<std::vector<std::vector<Ref<long>>>> refs;  // per table, per client
  for (const auto& shape : tables) {
    prefixes.push_back(unique_name("rounds-bank"));
    refs.emplace_back();
    for (auto* stores : clients)
      refs.back().push_back(make_refs(*stores, prefixes.back(), shape.refs, shape.store));
  }
  const std::string own_clients = "avout, 8 clients in 1 process";
  const std::string one_client = "avout, 1 client, 8 threads";
  const std::string processes = "avout, 8 processes";
  Rounds measured;
  std::map<std::string, Costs> costs;
  // A threaded row on table `t`: its operations per second and costs, added to its tallies.
  auto threaded = [&](const std::string& name, const std::vector<Stores*>& used, std::size_t t) {
    std::vector<Client*> sessions;
    for (auto* stores : used) sessions.push_back(&stores->client);
    const CostSources sources{sessions, metrics.get(), server_pid};
    const Costs before = read_costs(sources);
    const Result row = threaded_operations(name, used, clients_in_bank, per_thread,
                                           [&](std::size_t c, std::mt19937& random) {
                                             tables[t].run(used[c]->client, refs[t][c], random);
                                           });
    Costs window = read_costs(sources) - before;
    window.operations = static_cast<double>(clients_in_bank) * per_thread;
    costs[name] += window;
    measured[name].push_back(row.operations_per_second);
  };
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t t = 0; t < tables.size(); ++t) {
      const Shape& shape = tables[t];
      threaded(own_clients + shape.suffix, clients, t);
      threaded(one_client + shape.suffix, {clients.front()}, t);
      const std::string name = processes + shape.suffix;
      measured[name].push_back(
          in_processes(servers, name, shape, prefixes[t], per_thread, server_pid, costs[name]));
      if (etcd == nullptr) continue;
      // The first round warms etcd as the servers were warmed; later ones only connect.
      const auto warm = round == 0 && t == 0 ? settings.warm_up() : std::chrono::milliseconds(100);
      for (auto& peer :
           etcd->run(shape.etcd_arguments + " -iterations " + std::to_string(2 * per_thread) +
                     " -warmup " + std::to_string(warm.count()) + "ms -server-pid " +
                     std::to_string(etcd->server_pid()))) {
        const auto& workload =
            peer.result.workload;  // "bank transfer, 8 clients in 1 process: etcd STM ..."
        const auto colon = workload.find(": ");
        if (colon == std::string::npos)
          throw std::runtime_error("bank rounds: unexpected etcd row " + workload);
        const std::string peer_name = workload.substr(colon + 2) + shape.suffix;
        measured[peer_name].push_back(peer.result.operations_per_second);
        costs[peer_name] += peer_costs(peer);
      }
    }
  }
  for (const auto& shape : tables) {
    std::printf(
        "\n== bank rounds: 8 clients, %s, %d alternating rounds of %d %s per client; %s/s, "
        "median [min, max] ==\n",
        shape.title.c_str(), rounds, per_thread, shape.unit.c_str(), shape.unit.c_str());
    int width = 44;
    for (const auto& [name, each] : measured) {
      if (belongs(name, shape, tables)) width = std::max(width, static_cast<int>(name.size()));
    }
    for (const auto& [name, each] : measured) {
      if (!belongs(name, shape, tables)) continue;
      std::printf("  %-*s %7.0f [%.0f, %.0f]\n", width, name.c_str(), median(each),
                  *std::min_element(each.begin(), each.end()),
                  *std::max_element(each.begin(), each.end()));
    }
    std::printf("per round, one row's %s/s over another's:\n", shape.unit.c_str());
    for (const auto& mine : {own_clients, one_client, processes}) {
      for (const std::string isolation : {"serializable", "default"}) {
        print_ratios(measured, mine + shape.suffix, "etcd STM " + isolation + shape.suffix, width);
      }
    }
  }
  std::vector<std::pair<std::string, Costs>> rows;
  for (const auto& shape : tables) {
    for (const auto& [name, window] : costs) {
      if (belongs(name, shape, tables)) rows.emplace_back(name, window);
    }
  }
  print_costs(
      "bank rounds: per operation, all rounds (requests by kind, round trips and failed "
      "multis over every session of the row's process(es); CPU ms" +
          std::string(server_pid == 0 ? ", the server's not found" : "") + ")",
      rows);
}

}  // namespace avout::bench
