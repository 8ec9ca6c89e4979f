#pragma once
// Fault injection at the ZooKeeper border, for tests only. The test executables are linked
// with -Wl,--wrap for each async call the core makes (tests/CMakeLists.txt), so every request
// passes through zookeeper_faults.cpp first. With no FaultPlan alive each call goes straight to
// the real C client; while a plan lives, each request draws from the plan's seeded stream of
// the calling thread (support/fault_streams.hpp):
//   reply lost    the server applies the request, the caller hears ZCONNECTIONLOSS
//                 (mutations only: a read whose watch the server set cannot be un-set)
//   fail early    nothing is sent, the caller hears ZCONNECTIONLOSS
//   expire        the session is expired by a twin handle, before or after the request
//                 (on the requesting thread, which waits up to a few seconds for it)
//   delay         the handle's replies reach callers up to `max_delay` later, in order
//   event delay   a watch event (not a session event) reaches its watcher up to `max_delay`
//                 later, on the completion thread: replies and events after it wait too, so
//                 the order the server produced is kept (a stale cache stays stale longer)
// Every completion still runs exactly once.
//
// Independently of any plan, a CounterOffset makes the server's sequential counters look far
// along (near their wrap), so that code comparing sequence numbers meets the wrap in a test.

#include <chrono>
#include <cstdint>
#include <string>

namespace avout::testing {

/// Probabilities (0..1) per request of each fault, drawn in this order.
struct ZooKeeperFaultRates {
  double reply_lost = 0;  ///< create, set, delete and multi only
  double fail_early = 0;
  double expire = 0;  ///< mutations only; half before the request, half after
  double delay = 0;
  std::chrono::milliseconds max_delay{200};  ///< keep well under the handle's 2 s close wait
  double event_delay = 0;  ///< per watch event, for watches set while the plan lives
};

/// How many faults of each kind a plan has injected.
struct ZooKeeperFaultCounts {
  std::uint64_t requests = 0, reply_lost = 0, fail_early = 0, expired = 0, delayed = 0;
  std::uint64_t delayed_events = 0;  ///< watch events held back (ZooKeeperFaultRates::event_delay)
};

/// Turns injection on for this process while alive (one at a time).
class FaultPlan {
 public:
  /// Starts injecting with `rates`, drawing from the calling threads' streams of a source
  /// seeded with `seed` (support/fault_streams.hpp); `hosts` is the
  /// connect string (without chroot) a handle returns to after an expiry.
  FaultPlan(std::uint64_t seed, ZooKeeperFaultRates rates, std::string hosts);
  /// Stops injecting (requests already substituted still complete through it).
  ~FaultPlan();
  FaultPlan(const FaultPlan&) = delete;
  FaultPlan& operator=(const FaultPlan&) = delete;
  /// What was injected so far.
  static ZooKeeperFaultCounts counts();
  /// Pauses (false) or resumes (true) injection without ending the plan: a test's own setup
  /// and final checks run without faults.
  static void enable(bool on);
};

/// The kinds of request the injector sees.
enum class ZooKeeperCall { create, set, remove, multi, get, exists, children, sync };

/// Makes the next `count` requests of `call` whose path contains `within` (for a multi: any
/// of its ops' paths) fail early, or, with `reply_lost` (mutations only), apply with their
/// reply lost; with or without a FaultPlan, before its own draws. The first `after` matching
/// requests pass untouched. For a test that needs one exact fault:
/// `fail_next(ZooKeeperCall::remove, lock_folder, 1);` (the second sync of a folder:
/// `fail_next(ZooKeeperCall::sync, folder, 1, false, 1)`).
void fail_next(ZooKeeperCall call, std::string within, int count, bool reply_lost = false,
               int after = 0);
/// How many of the faults fail_next asked for are still to come.
int failures_to_come();
/// Drops the faults fail_next asked for that have not come yet (a test's quiet phase).
void cancel_failures();

/// While alive (with or without a FaultPlan), the sequential suffix of each
/// node whose parent path contains `within` looks `sequence` further along than the server's:
/// shown = int32(real + sequence), formatted as ZooKeeper formats its signed 32-bit child
/// counter ("%010d": 2147483647, then -2147483648, -000000005 ... -000000001, 0000000000).
/// Create replies (zoo_acreate and the creates of a multi) and child listings show the offset
/// names; paths the caller sends back (reads, watches, deletes, sets, syncs, the ops of a
/// multi) are translated to the real ones. Watch events keep the server's real paths.
/// With `version`, the data version of every node whose path contains `within` looks that
/// much further along too (int32, wrapping): in the stats of get, exists, set and a multi's
/// sets; versions sent (set, delete, a multi's check, set and delete) are translated back,
/// -1 ("any version") unchanged. A node just created then shows version `version`, so code
/// that assumes a fresh node's version 0 fails under it: pick `within` accordingly.
/// Usage: `CounterOffset wrap("/lock-test/", (std::int64_t{1} << 31) - 5);` (sequences only),
/// `CounterOffset near_limit("/atoms/a", 0, INT32_MAX - 3);` (versions only).
/// Several may live at once, for different paths: a path takes the offsets of the first one
/// made (among those alive) whose `within` it contains.
class CounterOffset {
 public:
  CounterOffset(std::string within, std::int64_t sequence, std::int32_t version = 0);
  ~CounterOffset();
  CounterOffset(const CounterOffset&) = delete;
  CounterOffset& operator=(const CounterOffset&) = delete;
};

/// Rates read from the environment:
/// AVOUT_ZK_FAULTS="lost=0.05,early=0.02,expire=0.002,delay=0.1,events=0.1"
/// (missing keys keep `defaults`; "off" gives all zeros).
ZooKeeperFaultRates zookeeper_fault_rates_from_env(ZooKeeperFaultRates defaults);

/// "lost=0.05,early=0.02,..." for a failure report.
std::string describe(const ZooKeeperFaultRates& rates);

/// "1234 zookeeper requests, 5 replies lost, ..." for a run's report.
std::string describe(const ZooKeeperFaultCounts& counts);

}  // namespace avout::testing
