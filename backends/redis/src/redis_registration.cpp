#include <avout/redis.hpp>
#include <avout/store_registry.hpp>

namespace avout::redis {

void register_store_schemes() {
  auto factory = [](Client&, const std::string& url) {
    return StoreHandle(std::make_unique<Store>(url));
  };
  // rediss too: the Store refuses it with the reason (no TLS), rather than "unknown scheme".
  for (const char* scheme : {"redis", "rediss", "tcp", "unix"})
    register_store_scheme(scheme, factory);
}

}  // namespace avout::redis
