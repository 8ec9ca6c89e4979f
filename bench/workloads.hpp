#pragma once
// The benchmark workloads. Each builds its own clients and stores (in every child process).

#include "floors.hpp"

#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include <memory>
#include <string>

namespace avout::bench {

/// Where the servers of this run are.
struct Servers {
  std::string zookeeper;
  std::string redis;
  std::string postgres;
};

/// A client and one store of each kind, as each benchmark process makes them.
struct Stores {
  explicit Stores(const Servers& servers)
      : client(servers.zookeeper), redis(servers.redis), postgres(servers.postgres) {}
  Client client;
  redis::Store redis;
  postgres::Store postgres;
  /// 0: ZooKeeper, 1: Redis, 2: PostgreSQL.
  Store& store(int kind) {
    if (kind == 1) return redis;
    if (kind == 2) return postgres;
    return client.default_store();
  }
};

/// Names of the store kinds, by index.
inline const char* store_name(int kind) {
  return kind == 1 ? "redis" : kind == 2 ? "postgres" : "zookeeper";
}

/// bench/atom: swap latency and throughput per store, uncontended and from 8 processes.
void run_atom_workloads(const Settings& settings, const Servers& servers, const Floors& floors);

/// bench/agent: sends run per second and the latency from send to run, 1 and 4 processes.
void run_agent_workloads(const Settings& settings, const Servers& servers, const Floors& floors);

/// bench/lock: Gaggle's benchmark for every lock strategy and the Redis SET NX peer.
void run_lock_workloads(const Settings& settings, const Servers& servers, const Floors& floors);

/// Peers: Redis WATCH/MULTI and PostgreSQL SERIALIZABLE bank transfers, Avout's 2011 recipe.
void run_peer_workloads(const Settings& settings, const Servers& servers, const Floors& floors);

/// bench/stm: read-only and read-write transactions over k refs, and the contended bank.
void run_stm_workloads(const Settings& settings, const Servers& servers, const Floors& floors);

}  // namespace avout::bench
