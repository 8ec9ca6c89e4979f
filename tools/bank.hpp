#pragma once
// `avout bank`: processes transferring money between refs spread over the given stores,
// while the parent prints the total (which must never change) once a second.

#include <avout/avout.hpp>

#include <string>

namespace avout::tool {

/// Settings of the bank demo.
struct BankSettings {
  ClientOptions client;    ///< where ZooKeeper is
  std::string redis;       ///< Redis URL; empty: no Redis accounts
  std::string postgres;    ///< PostgreSQL URL; empty: no PostgreSQL accounts
  int processes = 4;       ///< transferring processes
  int accounts = 12;       ///< accounts, spread round-robin over the stores
  int seconds = 10;        ///< how long to run
};

/// Runs the demo; returns 0 when every printed total equalled the initial one, else 1.
int run_bank(const BankSettings& settings);

}  // namespace avout::tool
