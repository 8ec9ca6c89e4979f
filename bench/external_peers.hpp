#pragma once
// The peers that run outside this process: etcd's STM and Mutex (a Go program against an
// etcd the bench starts) and Apache Curator's recipes (a Java program on the bench's
// ZooKeeper). Each is built and run when its tools are installed; when they are not, the
// bench says so in one line and goes on.

#include "workloads.hpp"

namespace avout::bench {

/// etcd 3.4's STM (serializable and the default isolation) and Mutex, on the same workloads
/// as avout's rows, beside etcd's own floor (a Get, a Put) measured in the same program.
void run_etcd_peer(const Settings& settings);

/// Curator's DistributedAtomicLong, InterProcessMutex and InterProcessReadWriteLock on the
/// bench's ZooKeeper.
void run_curator_peer(const Settings& settings, const Servers& servers, const Floors& floors);

}  // namespace avout::bench
