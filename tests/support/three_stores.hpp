#pragma once
// What many tests make in every process: a client of the shared ZooKeeper and one store of
// each kind (ZooKeeper, Redis, PostgreSQL), and accounts spread over them.

#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include "servers.hpp"

#include <chrono>
#include <random>
#include <string>
#include <vector>

namespace avout::testing {

/// Starts the shared servers (in the parent, before any fork, so children only connect).
inline void start_shared_servers() {
  (void)shared_zookeeper();
  (void)shared_redis();
  (void)shared_postgres();
}

/// "<folder>/<stem>-<random>": a name no other test run uses.
inline std::string unique_name(const std::string& folder, const std::string& stem) {
  static std::mt19937_64 random{std::random_device{}()};
  return folder + "/" + stem + "-" + std::to_string(random() % 1000000000);
}

/// A client with one store of each kind.
struct ThreeStores {
  avout::Client client;
  avout::redis::Store redis{shared_redis().url()};
  avout::postgres::Store postgres{shared_postgres().url()};

  explicit ThreeStores(std::chrono::milliseconds session_timeout = std::chrono::milliseconds(6000))
      : client(avout::ClientOptions{.hosts = shared_zookeeper().connect_string(),
                                    .session_timeout = session_timeout}) {}

  /// 0: ZooKeeper, 1: Redis, 2: PostgreSQL (by index modulo 3).
  avout::Store& store(int index) {
    switch (index % 3) {
      case 0: return client.default_store();
      case 1: return redis;
      default: return postgres;
    }
  }
  /// The name of account `index` below `prefix`.
  static std::string account_name(const std::string& prefix, int index) {
    return prefix + "/account-" + std::to_string(index);
  }
  /// `count` accounts below `prefix`, spread round-robin over the three stores.
  std::vector<avout::Ref<long>> accounts(const std::string& prefix, int count, long initial) {
    std::vector<avout::Ref<long>> refs;
    for (int i = 0; i < count; ++i) refs.push_back(client.ref<long>(account_name(prefix, i), initial, store(i)));
    return refs;
  }
};

}  // namespace avout::testing
