#pragma once
// Everything of avout's core API in one include: Client, Atom, Ref, locks, Barrier, Semaphore,
// LeaderElection, WorkQueue, errors, codecs, metrics, the backend interfaces (and the split of
// stored values) and the ZooKeeper session.

#include <avout/agent.hpp>
#include <avout/atom.hpp>
#include <avout/backend.hpp>
#include <avout/barrier.hpp>
#include <avout/client.hpp>
#include <avout/codec.hpp>
#include <avout/distributed_lock.hpp>
#include <avout/errors.hpp>
#include <avout/guarded_by.hpp>
#include <avout/inspect.hpp>
#include <avout/isolation.hpp>
#include <avout/leader_election.hpp>
#include <avout/lease_lock.hpp>
#include <avout/metrics.hpp>
#include <avout/ref.hpp>
#include <avout/semaphore.hpp>
#include <avout/store_registry.hpp>
#include <avout/stored_value.hpp>
#include <avout/version.hpp>
#include <avout/work_queue.hpp>
#include <avout/zookeeper_session.hpp>
