#include <avout/deadline.hpp>
#include <avout/errors.hpp>

#include <condition_variable>
#include <mutex>

namespace avout {

bool Deadline::sleep_for(Clock::duration pause) const {
  auto until = Clock::now() + pause;
  if (when_ && *when_ < until) until = *when_;
  // condition_variable_any's stop_token wait wakes at once on a stop request.
  std::mutex mutex;
  std::condition_variable_any woken;
  std::unique_lock lock(mutex);
  woken.wait_until(lock, stop_, until, [] { return false; });
  return !expired();
}

std::string Deadline::reason() const { return stop_requested() ? "cancelled" : "deadline passed"; }

void Deadline::expire(const std::string& what) const { throw Timeout(what + ": " + reason()); }

}  // namespace avout
