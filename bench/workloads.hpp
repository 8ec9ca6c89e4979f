#pragma once
// The benchmark workloads. Each builds its own clients and stores (in every child process).

#include "floors.hpp"

#include <avout/avout.hpp>

#include <builtin_stores.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace avout::bench {

/// Where the servers of this run are (the floors and the peers talk to them directly).
struct Servers {
  std::string zookeeper;
  std::string redis;
  std::string postgres;
};

/// One store a run measures: its name in reports, its URL and its get+set floor.
struct StoreUrl {
  std::string name;
  std::string url;
  double Floors::*floor;
};

/// The stores a run measures, in report order: the one list of them in the bench.
inline std::vector<StoreUrl> store_urls(const Servers& servers) {
  return {{"zookeeper", "zookeeper:", &Floors::zookeeper_get_set},
          {"redis", servers.redis, &Floors::redis_get_set},
          {"postgres", servers.postgres, &Floors::postgres_get_set}};
}

/// A fresh ZooKeeper path under /bench for a workload's nodes: `stem` and a random number.
inline std::string unique_name(const std::string& stem) {
  return "/bench/" + stem + "-" + std::to_string(std::random_device{}());
}

/// Where a workload puts its refs when not all in one store (named by its store_urls name):
/// round-robin over all the stores of store_urls.
inline const std::string mixed = "mixed";

/// Where a workload can place its refs: each store of store_urls alone, then mixed.
inline std::vector<std::string> placements(const Servers& servers) {
  std::vector<std::string> all;
  for (const auto& store : store_urls(servers)) all.push_back(store.name);
  all.push_back(mixed);
  return all;
}

/// A client and each store of store_urls (made by the store registry from its URL), as each
/// benchmark process makes them.
struct Stores {
  explicit Stores(const Servers& servers)
      : client(servers.zookeeper), urls(store_urls(servers)), handles(make(client, urls)) {}
  /// The same, the client recording its metrics into `metrics` (docs/metrics.md).
  Stores(const Servers& servers, std::shared_ptr<MetricsSink> metrics)
      : client(ClientOptions{.hosts = servers.zookeeper, .metrics = std::move(metrics)}),
        urls(store_urls(servers)),
        handles(make(client, urls)) {}
  Client client;
  std::vector<StoreUrl> urls;
  std::vector<StoreHandle> handles;

  /// The index in `urls` of the store that holds ref number `ref` of a workload placed at
  /// `where`: the store of that name, or for "mixed" round-robin over all of them.
  std::size_t index(const std::string& where, int ref) const {
    if (where == mixed) return static_cast<std::size_t>(ref) % handles.size();
    for (std::size_t i = 0; i < urls.size(); ++i) {
      if (urls[i].name == where) return i;
    }
    throw std::invalid_argument("bench: no store named " + where);
  }
  /// The store that holds ref number `ref` of a workload placed at `where` (see index).
  Store& store(const std::string& where, int ref = 0) { return *handles[index(where, ref)]; }

 private:
  static std::vector<StoreHandle> make(Client& client, const std::vector<StoreUrl>& urls) {
    register_builtin_stores();
    std::vector<StoreHandle> made;
    for (const auto& store : urls) made.push_back(make_store(client, store.url));
    return made;
  }
};

/// The bank's transfer: moves 1 from `from` to `to` in one transaction, both balances read
/// together (deref_all: one round trip); `each_attempt` runs at the start of every attempt.
inline void transfer(Client& client, Ref<long>& from, Ref<long>& to,
                     const std::function<void()>& each_attempt = {}) {
  client.dosync([&] {
    if (each_attempt) each_attempt();
    const auto [taken, given] = deref_all(from, to);
    from.ref_set(taken - 1);
    to.ref_set(given + 1);
  });
}

/// The short task of Gaggle's lock benchmark, done while holding a lock or a permit: about
/// 100 microseconds of work (a busy wait, not a sleep).
inline void short_task() {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
  while (std::chrono::steady_clock::now() < until) {
  }
}

/// Runs transactions over every store and plain ZooKeeper reads and writes for a few seconds,
/// so that nothing measured after it pays for the servers' warm-up (ZooKeeper's JIT above all).
void warm_up_servers(const Settings& settings, const Servers& servers);

/// bench/atom: swap latency and throughput per store, uncontended and from 8 processes.
void run_atom_workloads(const Settings& settings, const Servers& servers, const Floors& floors);

/// bench/agent: sends run per second and the latency from send to run, 1 and 4 processes.
void run_agent_workloads(const Settings& settings, const Servers& servers, const Floors& floors);

/// bench/lock: Gaggle's benchmark for every lock strategy and the Redis SET NX peer.
void run_lock_workloads(const Settings& settings, const Servers& servers, const Floors& floors);

/// Peers: Redis WATCH/MULTI and PostgreSQL SERIALIZABLE bank transfers, Avout's 2011 recipe.
void run_peer_workloads(const Settings& settings, const Servers& servers, const Floors& floors);

/// The contended bank taken apart: attempts, sleeps, store calls and ZooKeeper requests per
/// commit, for mixed and Redis refs, and with less contention for comparison.
void run_bank_anatomy(const Settings& settings, const Servers& servers, const Floors& floors);

/// Accounts of the peers' contended bank (avout's and every peer's).
constexpr int bank_accounts = 20;

/// Two different accounts of that bank, drawn from `random`: a transfer's from and to.
inline std::pair<int, int> pick_accounts(std::mt19937& random) {
  const int from = static_cast<int>(random() % bank_accounts);
  return {from, static_cast<int>((from + 1 + random() % (bank_accounts - 1)) % bank_accounts)};
}

/// `operation(client, random)` `per_thread` times on each of `threads` threads of this process,
/// thread t passing client index t % clients.size() and a random source of its own: the
/// shape of etcd's peer (goroutines of one process). Throughput over the threads' window;
/// ZooKeeper requests, round trips and retries per operation, over all the clients.
Result threaded_operations(const std::string& workload, const std::vector<Stores*>& clients,
                           int threads, int per_thread,
                           const std::function<void(std::size_t, std::mt19937&)>& operation);

/// Bank transfers on `threads` threads of this process, thread t on clients[t % clients.size()]
/// with accounts[t % clients.size()], `per_thread` each: the shape of etcd's peer (goroutines
/// of one process), a client per thread or one shared. Throughput over the threads' window;
/// ZooKeeper requests and round trips per transfer, over all the clients.
Result threaded_bank(const std::string& workload, const std::vector<Stores*>& clients,
                     std::vector<std::vector<Ref<long>>>& accounts, int threads, int per_thread,
                     const std::function<std::pair<int, int>(std::mt19937&)>& pick);

class EtcdPeer;

/// The contended bank in alternating rounds: avout with 8 clients in one process, with one
/// client on 8 threads and as 8 processes, and etcd's STM (when `etcd` is not null), on 20
/// and 200 accounts and as transactions reading 100 refs and writing 1; per-round ratios,
/// and per operation the ZooKeeper requests by kind, retries by cause and CPU.
void run_bank_rounds(const Settings& settings, const Servers& servers, const EtcdPeer* etcd);

/// bench/recipes: avout's Semaphore, WorkQueue and LeaderElection beside Curator's recipes on
/// the same ZooKeeper and etcd's Election (when `etcd` is not null): acquire+release,
/// put+take, campaign+resign, and the leader hand-over after its process is killed.
void run_recipe_workloads(const Settings& settings, const Servers& servers, const Floors& floors,
                          const EtcdPeer* etcd);

/// Read-write transactions over k refs in every placement, the raw floor of each and etcd's
/// STM (when `etcd` is not null), measured in alternating rounds; per-round ratios.
void run_interleaved_rounds(const Settings& settings, const Servers& servers, const EtcdPeer* etcd);

/// bench/stm: read-only and read-write transactions over k refs, and the contended bank.
void run_stm_workloads(const Settings& settings, const Servers& servers, const Floors& floors);

}  // namespace avout::bench
