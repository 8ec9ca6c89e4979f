#include <avout/postgres.hpp>
#include <avout/store_registry.hpp>

namespace avout::postgres {

void register_store_schemes() {
  auto factory = [](Client&, const std::string& url) {
    return StoreHandle(std::make_unique<Store>(url));
  };
  for (const char* scheme : {"postgresql", "postgres"}) register_store_scheme(scheme, factory);
}

}  // namespace avout::postgres
