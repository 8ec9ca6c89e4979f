#pragma once
// `avout bank`: processes transferring money between refs spread over the given stores,
// named by URL, while the parent prints the total (which must never change) once a second.

#include <avout/avout.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace avout::tool {

/// Settings of the bank demo.
struct BankSettings {
  ClientOptions client;             ///< where ZooKeeper is
  std::vector<std::string> stores;  ///< URLs of the stores besides zookeeper: (always one)
  int processes = 4;                ///< transferring processes
  int accounts = 12;                ///< accounts, spread round-robin over the stores
  std::chrono::milliseconds duration = std::chrono::seconds(10);  ///< how long to run
};

/// Runs the demo; returns 0 when every printed total equalled the initial one, else 1.
int run_bank(const BankSettings& settings);

}  // namespace avout::tool
