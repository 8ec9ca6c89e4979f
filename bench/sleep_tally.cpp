#include "sleep_tally.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#include <chrono>

namespace avout::bench {

namespace {
thread_local std::uint64_t slept = 0;
}

std::uint64_t slept_ns() { return slept; }

}  // namespace avout::bench

namespace {
// Adds the time since `start` to this thread's tally.
void add_since(std::chrono::steady_clock::time_point start) {
  avout::bench::slept += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
}
}  // namespace

// Interposes the C library's nanosleep for the whole executable (libstdc++'s sleep_for calls
// it): the real one, found with RTLD_NEXT, does the sleeping.
extern "C" int nanosleep(const timespec* duration, timespec* remaining) {
  using Real = int (*)(const timespec*, timespec*);
  static const Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "nanosleep"));
  const auto start = std::chrono::steady_clock::now();
  const int result = real(duration, remaining);
  add_since(start);
  return result;
}

// Deadline::sleep_for (the library's back-off) waits on a condition variable with a steady
// clock deadline, which libstdc++ turns into pthread_cond_clockwait; replies are awaited on
// futures (futexes), so on a caller's thread this wait is only ever a pause.
extern "C" int pthread_cond_clockwait(pthread_cond_t* condition, pthread_mutex_t* mutex,
                                      clockid_t clock, const timespec* until) {
  using Real = int (*)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const timespec*);
  static const Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "pthread_cond_clockwait"));
  const auto start = std::chrono::steady_clock::now();
  const int result = real(condition, mutex, clock, until);
  add_since(start);
  return result;
}
