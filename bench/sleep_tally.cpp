#include "sleep_tally.hpp"

#include <dlfcn.h>
#include <time.h>

#include <chrono>

namespace avout::bench {

namespace {
thread_local std::uint64_t slept = 0;
}

std::uint64_t slept_ns() { return slept; }

}  // namespace avout::bench

// Interposes the C library's nanosleep for the whole executable (libstdc++'s sleep_for calls
// it): the real one, found with RTLD_NEXT, does the sleeping.
extern "C" int nanosleep(const timespec* duration, timespec* remaining) {
  using Real = int (*)(const timespec*, timespec*);
  static const Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "nanosleep"));
  const auto start = std::chrono::steady_clock::now();
  const int result = real(duration, remaining);
  avout::bench::slept += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  return result;
}
