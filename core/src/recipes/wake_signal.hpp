#pragma once
// A counter that watch callbacks and session listeners bump, and a waiter waits on: "look
// again". Shared by pointer, so a watch firing after its waiter is gone touches only this.

#include <avout/deadline.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace avout::detail {

/// How long a recipe's wait trusts its watches before it looks again anyway (a watch lost
/// with its session).
inline constexpr std::chrono::milliseconds look_again_after{2000};

/// Wake-ups for one waiter: bump() from any thread, wait_past() in the waiter.
class WakeSignal {
 public:
  /// The number of bumps so far: read it before looking, wait past it after.
  std::uint64_t count() {
    std::lock_guard lock(mutex_);
    return count_;
  }
  /// Wakes the waiter (a watch fired, the session changed).
  void bump() {
    {
      std::lock_guard lock(mutex_);
      ++count_;
    }
    changed_.notify_all();
  }
  /// Waits until count() passed `seen`, at most `cap` (look_again_after: a safety net against
  /// a watch lost with its session; a back-off pause after a connection loss, which a
  /// reconnect cuts short); false once `deadline` expired.
  bool wait_past(std::uint64_t seen, const Deadline& deadline, Deadline::Clock::duration cap) {
    std::unique_lock lock(mutex_);
    const auto until = std::min(deadline.time_or_far(), Deadline::Clock::now() + cap);
    std::stop_token stop = deadline.stop_token();
    changed_.wait_until(lock, stop, until, [&] { return count_ > seen; });
    return !deadline.expired();
  }

 private:
  std::mutex mutex_;
  std::condition_variable_any changed_;
  std::uint64_t count_ = 0;
};

}  // namespace avout::detail
