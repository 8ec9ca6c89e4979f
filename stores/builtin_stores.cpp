#include "builtin_stores.hpp"

#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include <mutex>

namespace avout {

void register_builtin_stores() {
  static std::once_flag once;
  std::call_once(once, [] {
    redis::register_store_schemes();
    postgres::register_store_schemes();
  });
}

}  // namespace avout
