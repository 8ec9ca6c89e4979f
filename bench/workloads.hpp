#pragma once
// The benchmark workloads. Each builds its own clients and stores (in every child process).

#include "floors.hpp"

#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include <builtin_stores.hpp>

#include <memory>
#include <string>
#include <vector>

namespace avout::bench {

/// Where the servers of this run are.
struct Servers {
  std::string zookeeper;
  std::string redis;
  std::string postgres;
};

/// One kind of store a run measures: its name in reports, its URL and its get+set floor.
struct StoreKind {
  std::string name;
  std::string url;
  double Floors::*floor;
};

/// The kinds of store, by index: 0 ZooKeeper, 1 Redis, 2 PostgreSQL.
inline std::vector<StoreKind> store_kinds(const Servers& servers) {
  return {{"zookeeper", "zookeeper:", &Floors::zookeeper_get_set},
          {"redis", servers.redis, &Floors::redis_get_set},
          {"postgres", servers.postgres, &Floors::postgres_get_set}};
}

/// Names of the store kinds, by index.
inline std::string store_name(int kind) {
  return store_kinds(Servers{})[static_cast<std::size_t>(kind)].name;
}

/// A client and one store of each kind (made from its URL), as each benchmark process makes them.
struct Stores {
  explicit Stores(const Servers& servers) : client(servers.zookeeper), handles(make(client, servers)) {}
  Client client;
  std::vector<StoreHandle> handles;
  /// The Redis store itself (lease locks are made from it).
  redis::Store& redis = dynamic_cast<redis::Store&>(*handles[1]);
  /// The PostgreSQL store itself.
  postgres::Store& postgres = dynamic_cast<postgres::Store&>(*handles[2]);
  /// The store of kind `kind` (see store_kinds).
  Store& store(int kind) { return *handles[static_cast<std::size_t>(kind)]; }

 private:
  static std::vector<StoreHandle> make(Client& client, const Servers& servers) {
    register_builtin_stores();
    std::vector<StoreHandle> made;
    for (const auto& kind : store_kinds(servers)) made.push_back(make_store(client, kind.url));
    return made;
  }
};

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

/// bench/stm: read-only and read-write transactions over k refs, and the contended bank.
void run_stm_workloads(const Settings& settings, const Servers& servers, const Floors& floors);

}  // namespace avout::bench
