#include "builtin_stores.hpp"

#ifdef AVOUT_WITH_POSTGRES
#include <avout/postgres.hpp>
#endif
#ifdef AVOUT_WITH_REDIS
#include <avout/redis.hpp>
#endif

#include <mutex>

namespace avout {

void register_builtin_stores() {
  static std::once_flag once;
  std::call_once(once, [] {
#ifdef AVOUT_WITH_REDIS
    redis::register_store_schemes();
#endif
#ifdef AVOUT_WITH_POSTGRES
    postgres::register_store_schemes();
#endif
  });
}

}  // namespace avout
