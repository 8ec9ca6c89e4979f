#pragma once
// What many tests make in every process: a client of the shared ZooKeeper and one store of
// each kind (ZooKeeper, Redis, PostgreSQL), and accounts spread over them.

#include <avout/avout.hpp>

#include "servers.hpp"

#include <builtin_stores.hpp>

#include <chrono>
#include <random>
#include <string>
#include <vector>

namespace avout::testing {

/// "<folder>/<stem>-<random>": a name no other test run uses.
inline std::string unique_name(const std::string& folder, const std::string& stem) {
  static std::mt19937_64 random{std::random_device{}()};
  return folder + "/" + stem + "-" + std::to_string(random() % 1000000000);
}

/// The URLs of the shared servers' stores: ZooKeeper, Redis, PostgreSQL.
inline std::vector<std::string> shared_store_urls() {
  return {"zookeeper:", shared_redis().url(), shared_postgres().url()};
}

/// Starts the shared servers (in the parent, before any fork, so children only connect).
inline void start_shared_servers() {
  (void)shared_zookeeper();
  (void)shared_store_urls();  // starts each store's server
}

/// The shared servers' stores, made by the store registry, in shared_store_urls()'s order.
inline std::vector<avout::StoreHandle> shared_stores(avout::Client& client) {
  avout::register_builtin_stores();
  std::vector<avout::StoreHandle> made;
  for (const auto& url : shared_store_urls()) made.push_back(avout::make_store(client, url));
  return made;
}

/// A client with one store of each kind, made from their URLs.
struct ThreeStores {
  avout::Client client;
  std::vector<avout::StoreHandle> handles = shared_stores(client);
  avout::Store& redis = *handles[1];     ///< the Redis store
  avout::Store& postgres = *handles[2];  ///< the PostgreSQL store

  explicit ThreeStores(std::chrono::milliseconds session_timeout = std::chrono::milliseconds(6000))
      : client(avout::ClientOptions{.hosts = shared_zookeeper().connect_string(),
                                    .session_timeout = session_timeout}) {}

  /// 0: ZooKeeper, 1: Redis, 2: PostgreSQL (by index modulo 3).
  avout::Store& store(int index) { return *handles[static_cast<std::size_t>(index) % handles.size()]; }

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
