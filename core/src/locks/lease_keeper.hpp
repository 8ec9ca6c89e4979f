#pragma once
// The one thread per LeaseLock that keeps its leases alive and tells of their loss: a map of
// watched leases ordered by nothing, scanned for the earliest due one (a process holds
// hundreds, not millions), renewals and callbacks made outside the mutex.

#include <avout/lease_lock.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace avout::detail {

/// Watches a LeaseLock's leases: renews the kept ones, calls on_lost for the lost ones.
/// Made by make_lease_keeper only: its thread holds it alive while it runs.
class LeaseKeeper : public std::enable_shared_from_this<LeaseKeeper> {
 public:
  /// A keeper renewing through `strategy`; its thread starts at the first watch.
  explicit LeaseKeeper(std::shared_ptr<LeaseStrategy> strategy);
  ~LeaseKeeper() = default;
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  /// Starts watching a new `lease` of `duration` (sets lease.latest), renewing it if `keep`.
  void watch(Lease& lease, std::chrono::milliseconds duration, bool keep);
  /// Stops watching `lease`, waiting for its renewal in flight; no renewal or callback follows.
  void stop(const Lease& lease);
  /// Notes an explicit renewal of `lease` for `duration` (its new expires).
  void renewed(const Lease& lease, std::chrono::milliseconds duration);
  /// Adds a loss callback.
  void on_lost(std::function<void(const Lease&)> callback);
  /// Stops the thread (keep-alive ends; no callback follows): joins it, or, called from a
  /// callback on it, lets it end by itself once that callback returns.
  void shut_down();

 private:
  using Id = std::pair<std::string, std::uint64_t>;
  struct Watched {
    Lease lease;
    std::chrono::milliseconds duration;
    bool keep;
    std::chrono::steady_clock::time_point next;  // next renewal, or the end to check
  };

  void run();
  // Handles the due entry `id`; called and returns with `lock` held.
  void handle(std::unique_lock<std::mutex>& lock, const Id& id);
  // Marks `lease` lost, forgets it and calls the callbacks with `lock` released.
  void lose(std::unique_lock<std::mutex>& lock, std::map<Id, Watched>::iterator found);

  const std::shared_ptr<LeaseStrategy> strategy_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<Id, Watched> watched_;
  std::optional<Id> renewing_;
  std::vector<std::function<void(const Lease&)>> callbacks_;
  bool stopping_ = false;
  std::thread thread_;
};

/// A keeper for a LeaseLock: the pointer's last copy shuts the keeper's thread down.
std::shared_ptr<LeaseKeeper> make_lease_keeper(std::shared_ptr<LeaseStrategy> strategy);

/// When a kept lease of `duration` is renewed next after a renewal at `now`.
std::chrono::steady_clock::time_point next_renewal(std::chrono::steady_clock::time_point now,
                                                   std::chrono::milliseconds duration);
/// When a renewal that threw at `now` is retried: soon, but never after `end`.
std::chrono::steady_clock::time_point next_retry(std::chrono::steady_clock::time_point now,
                                                 std::chrono::milliseconds duration,
                                                 std::chrono::steady_clock::time_point end);

}  // namespace avout::detail
