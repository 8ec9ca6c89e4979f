#pragma once
// What many tests make in every process: a client of the shared ZooKeeper and one store of
// each kind the tests use (ZooKeeper, Redis, PostgreSQL: shared_store_urls()), and accounts
// spread over them.

#include <avout/avout.hpp>

#include "servers.hpp"

#include <builtin_stores.hpp>

#include <chrono>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace avout::testing {

/// "<folder>/<stem>-<random>": a name no other test run uses.
inline std::string unique_name(const std::string& folder, const std::string& stem) {
  static std::mt19937_64 random{std::random_device{}()};
  return folder + "/" + stem + "-" + std::to_string(random() % 1000000000);
}

/// One store the tests use: the name tests pick it by and its URL.
struct StoreUrl {
  std::string name;
  std::string url;
};

/// The shared servers' stores, in the order ThreeStores::store(index) takes them: the one
/// list of stores the tests name (each made by the store registry from its URL).
inline std::vector<StoreUrl> shared_store_urls() {
  return {{"zookeeper", "zookeeper:"},
          {"redis", shared_redis().url()},
          {"postgres", shared_postgres().url()}};
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
  for (const auto& store : shared_store_urls())
    made.push_back(avout::make_store(client, store.url));
  return made;
}

/// A client with each store of shared_store_urls(), made from their URLs.
struct ThreeStores {
  avout::Client client;
  std::vector<avout::StoreHandle> handles = shared_stores(client);
  avout::Store& redis = named("redis");        ///< the Redis store
  avout::Store& postgres = named("postgres");  ///< the PostgreSQL store

  /// A client of the shared ZooKeeper with `session_timeout` whose dosyncs run in
  /// `isolation` unless they ask otherwise (ClientOptions::isolation).
  explicit ThreeStores(std::chrono::milliseconds session_timeout = std::chrono::milliseconds(6000),
                       avout::Isolation isolation = avout::Isolation::serializable)
      : client(avout::ClientOptions{.hosts = shared_zookeeper().connect_string(),
                                    .session_timeout = session_timeout,
                                    .isolation = isolation}) {}

  /// The store at `index` modulo their number, in shared_store_urls()'s order (0: ZooKeeper,
  /// 1: Redis, 2: PostgreSQL).
  avout::Store& store(int index) {
    return *handles[static_cast<std::size_t>(index) % handles.size()];
  }

  /// The store shared_store_urls() names `name`.
  avout::Store& named(const std::string& name) {
    const auto urls = shared_store_urls();
    for (std::size_t i = 0; i < urls.size(); ++i) {
      if (urls[i].name == name) return *handles[i];
    }
    throw std::invalid_argument("no shared store named " + name);
  }

  /// The name of account `index` below `prefix`.
  static std::string account_name(const std::string& prefix, int index) {
    return prefix + "/account-" + std::to_string(index);
  }
  /// `count` accounts below `prefix`, spread round-robin over the stores.
  std::vector<avout::Ref<long>> accounts(const std::string& prefix, int count, long initial) {
    std::vector<avout::Ref<long>> refs;
    for (int i = 0; i < count; ++i)
      refs.push_back(client.ref<long>(account_name(prefix, i), initial, store(i)));
    return refs;
  }
};

}  // namespace avout::testing
