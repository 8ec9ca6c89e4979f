#pragma once
// Keep-alive and loss for every LeaseLock of the process from ONE thread: each LeaseLock's
// keeper holds its watched leases (a map scanned for the earliest due one: a LeaseLock holds
// hundreds, not millions) and queues its earliest due time in the process's one schedule (a
// min-heap of due times), whose thread, started at the first lease that needs watching,
// serves the keepers in due order; renewals are made outside the mutexes. on_lost callbacks
// run on the process's lease callback thread (a CallbackExecutor, the client's kind), never
// on the schedule's: a slow callback must not delay any lease's renewal.

#include <avout/lease_lock.hpp>

#include "base/callback_executor.hpp"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace avout::detail {

/// Watches a LeaseLock's leases: renews the kept ones and posts on_lost for the lost ones,
/// when the process's lease schedule calls `serve`. Made by make_lease_keeper only: the schedule
/// holds it by weak_ptr.
class LeaseKeeper : public std::enable_shared_from_this<LeaseKeeper> {
 public:
  /// A keeper renewing through `strategy`; nothing runs until a lease needs watching.
  explicit LeaseKeeper(std::shared_ptr<LeaseStrategy> strategy);
  ~LeaseKeeper() = default;
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  /// Starts watching a new `lease` of `duration` (sets lease.latest), renewing it if `keep`.
  void watch(Lease& lease, std::chrono::milliseconds duration, bool keep);
  /// Stops watching `lease`, waiting for its renewal and its on_lost callbacks in flight
  /// (unless called from a lease callback); no renewal or callback for it follows.
  void stop(const Lease& lease);
  /// Stops renewing `lease` (waiting for its renewal in flight) and watches it as a lease
  /// without keep-alive: it ends at its latest expiry unless renewed by hand or released.
  void stop_renewing(const Lease& lease);
  /// Notes an explicit renewal of `lease` for `duration` (its new expires).
  void renewed(const Lease& lease, std::chrono::milliseconds duration);
  /// Adds a loss callback.
  void on_lost(std::function<void(const Lease&)> callback);
  /// Ends the keeping (no renewal or callback follows): waits for a renewal of this keeper in
  /// flight, and for its callbacks unless called from a lease callback (which may drop the
  /// last LeaseLock: it must not wait for itself).
  void shut_down();
  /// Handles this keeper's due leases if `at` is the due time it queued last; returns the
  /// next due time to queue, or nullopt (nothing to watch, or already queued earlier).
  std::optional<std::chrono::steady_clock::time_point> serve(
      std::chrono::steady_clock::time_point at);

 private:
  using Id = std::pair<std::string, std::uint64_t>;
  struct Watched {
    Lease lease;
    std::chrono::milliseconds duration;
    bool keep;
    std::chrono::steady_clock::time_point next;  // next renewal, or the end to check
  };

  // The earliest due time among the leases that need the schedule; called with mutex_ held.
  std::optional<std::chrono::steady_clock::time_point> earliest() const;
  // Queues `due` in the schedule unless an earlier time is queued; called with mutex_ held.
  void queue(std::chrono::steady_clock::time_point due);
  // Handles the due entry `id`; called and returns with `lock` held.
  void handle(std::unique_lock<std::mutex>& lock, const Id& id);
  // Marks `lease` lost, forgets it and posts its callbacks; called with mutex_ held.
  void lose(std::map<Id, Watched>::iterator found);
  // On the lease callback thread: calls `callbacks` with `lost` unless unlocked or shut down.
  void tell(const std::vector<std::function<void(const Lease&)>>& callbacks, const Lease& lost);

  std::shared_ptr<LeaseStrategy> strategy_;  // moved out by shut_down
  std::mutex mutex_;
  std::condition_variable idle_;  // renewing_ or calling_ reset
  std::map<Id, Watched> watched_;
  std::optional<Id> renewing_;
  std::set<Id> untold_;        // lost, their callbacks posted and not run yet
  std::optional<Id> calling_;  // the lease whose callbacks run, with mutex_ released
  std::optional<std::chrono::steady_clock::time_point> queued_;  // due time in the schedule
  std::vector<std::function<void(const Lease&)>> callbacks_;
  bool stopping_ = false;
};

/// The process's one lease schedule: a min-heap of (due time, keeper) served in order by one
/// thread, started at the first entry and joined at exit; and the lease callback thread.
class LeaseSchedule {
 public:
  /// The process's schedule.
  static LeaseSchedule& process();
  /// True while a lease callback runs on this thread.
  static bool in_callback();
  /// Asks for `keeper`'s serve(at) at `at`; a keeper gone by then is skipped.
  void queue(std::chrono::steady_clock::time_point at, std::weak_ptr<LeaseKeeper> keeper);
  /// Queues `task` on the lease callback thread (started at the first), which runs callbacks
  /// one at a time and logs what they throw.
  void post_callback(std::function<void()> task);
  LeaseSchedule() = default;
  /// Stops and joins the thread.
  ~LeaseSchedule();
  LeaseSchedule(const LeaseSchedule&) = delete;
  LeaseSchedule& operator=(const LeaseSchedule&) = delete;

 private:
  struct Entry {
    std::chrono::steady_clock::time_point at;
    std::weak_ptr<LeaseKeeper> keeper;
    bool operator>(const Entry& other) const { return at > other.at; }
  };
  void run();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> due_;
  bool stopping_ = false;
  std::thread thread_;
  std::unique_ptr<CallbackExecutor> callbacks_;  // made at the first post_callback
};

/// A keeper for a LeaseLock: the pointer's last copy shuts the keeper down.
std::shared_ptr<LeaseKeeper> make_lease_keeper(std::shared_ptr<LeaseStrategy> strategy);

/// When a kept lease of `duration` is renewed next after a renewal at `now`.
std::chrono::steady_clock::time_point next_renewal(std::chrono::steady_clock::time_point now,
                                                   std::chrono::milliseconds duration);
/// When a renewal that threw at `now` is retried: soon, but never after `end`.
std::chrono::steady_clock::time_point next_retry(std::chrono::steady_clock::time_point now,
                                                 std::chrono::milliseconds duration,
                                                 std::chrono::steady_clock::time_point end);

}  // namespace avout::detail
