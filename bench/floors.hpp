#pragma once
// The floors every workload is compared with, measured in the same run: raw ZooKeeper,
// Redis and PostgreSQL round trips, without avout in between.

#include "measure.hpp"

#include <string>
#include <vector>

namespace avout::bench {

/// p50 latencies (ms) of raw round trips.
struct Floors {
  double zookeeper_get = 0;      ///< one get
  double zookeeper_set = 0;      ///< one set
  double zookeeper_multi = 0;    ///< one multi of 4 sets
  double zookeeper_get_set = 0;  ///< get then versioned set: the floor of a ZooKeeper CAS
  double redis_get_set = 0;      ///< GET then SET: the floor of a Redis read-modify-write
  double postgres_get_set = 0;   ///< SELECT then UPDATE: the same for PostgreSQL
};

/// Measures the floors against the given servers; prints their table.
Floors measure_floors(const Settings& settings, const std::string& zookeeper,
                      const std::string& redis_url, const std::string& postgres_url);

}  // namespace avout::bench
