#pragma once
// The three lease stores the lease tests run every case on, and what one contender makes in
// each: its own client or store and a lease lock in it; and a log of the losses told.

#include "support/servers.hpp"

#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace avout::testing {

/// A store lease locks are held in.
enum class LeaseStoreKind { zookeeper, redis, postgres };
/// Every lease store, in the order the tests visit them.
inline const LeaseStoreKind all_lease_stores[] = {LeaseStoreKind::zookeeper, LeaseStoreKind::redis,
                                                  LeaseStoreKind::postgres};

/// The store's name, for CAPTURE.
inline const char* lease_store_name(LeaseStoreKind kind) {
  switch (kind) {
    case LeaseStoreKind::zookeeper: return "zookeeper";
    case LeaseStoreKind::redis: return "redis";
    case LeaseStoreKind::postgres: return "postgres";
  }
  return "?";
}

/// The shared test server's address of `kind` (connect string or URL).
inline std::string shared_lease_store_address(LeaseStoreKind kind) {
  switch (kind) {
    case LeaseStoreKind::zookeeper: return shared_zookeeper().connect_string();
    case LeaseStoreKind::redis: return shared_redis().url();
    case LeaseStoreKind::postgres: return shared_postgres().url();
  }
  return "";
}

/// What each process (or each contender inside one) makes: its own client or store, and
/// the lease lock `name` in it. Members die in reverse order: the lock before its client.
struct LeaseContender {
  std::unique_ptr<avout::Client> client;   ///< for ZooKeeper
  std::unique_ptr<avout::Store> store;     ///< for Redis and PostgreSQL
  std::optional<avout::LeaseLock> leases;  ///< the lease lock `name`
  LeaseStoreKind store_kind;               ///< the store it is in

  /// A contender on the server at `address` (a ZooKeeper client gets `session_timeout`).
  LeaseContender(LeaseStoreKind kind, const std::string& name, const std::string& address,
                 std::chrono::milliseconds session_timeout = std::chrono::milliseconds(6000))
      : store_kind(kind) {
    switch (kind) {
      case LeaseStoreKind::zookeeper:
        client = std::make_unique<avout::Client>(
            avout::ClientOptions{.hosts = address, .session_timeout = session_timeout});
        leases.emplace(client->lease_lock(name));
        break;
      case LeaseStoreKind::redis: {
        auto redis = std::make_unique<avout::redis::Store>(address);
        leases.emplace(avout::redis::lease_lock(*redis, name));
        store = std::move(redis);
        break;
      }
      case LeaseStoreKind::postgres: {
        auto postgres = std::make_unique<avout::postgres::Store>(address);
        leases.emplace(avout::postgres::lease_lock(*postgres, name));
        store = std::move(postgres);
        break;
      }
    }
  }
  /// A contender on the shared test server of `kind`.
  LeaseContender(LeaseStoreKind kind, const std::string& name)
      : LeaseContender(kind, name, shared_lease_store_address(kind)) {}
  /// The lease lock.
  avout::LeaseLock* operator->() { return &*leases; }
  /// Another lease lock, `name`, in the same client or store.
  avout::LeaseLock lease_lock(const std::string& name) {
    switch (store_kind) {
      case LeaseStoreKind::zookeeper: return client->lease_lock(name);
      case LeaseStoreKind::redis:
        return avout::redis::lease_lock(static_cast<avout::redis::Store&>(*store), name);
      case LeaseStoreKind::postgres:
        return avout::postgres::lease_lock(static_cast<avout::postgres::Store&>(*store), name);
    }
    return *leases;
  }
};

/// Counts the on_lost calls of a LeaseLock, per token.
struct LeaseLossLog {
  std::mutex mutex;                   ///< guards tokens
  std::vector<std::uint64_t> tokens;  ///< the lost leases' tokens, in call order
  /// Adds the counting callback to `leases`.
  void attach(avout::LeaseLock& leases) {
    leases.on_lost([this](const avout::Lease& lease) {
      std::lock_guard lock(mutex);
      tokens.push_back(lease.token);
    });
  }
  /// How many losses were told.
  std::size_t count() {
    std::lock_guard lock(mutex);
    return tokens.size();
  }
  /// Waits up to `timeout` for `n` losses; false if fewer came.
  bool wait_for(std::size_t n, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (count() < n && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return count() >= n;
  }
};

}  // namespace avout::testing
