#include "object_store.hpp"

#include "store_urls.hpp"

#include <avout/inspect.hpp>

namespace avout::tool {

namespace {
inspect::Kind kind_of(const std::string& kind) {
  if (kind == "atom") return inspect::Kind::atoms;
  if (kind == "ref") return inspect::Kind::refs;
  if (kind == "agent") return inspect::Kind::agents;
  throw InvalidName("only atoms, refs and agents keep values in a store, not a " + kind);
}
}  // namespace

StoreHandle object_store(Client& client, const std::string& kind, const std::string& name,
                         const std::string& given, const std::vector<std::string>& store_urls) {
  const auto recorded = inspect::recorded_store(client, kind_of(kind), name);
  if (!given.empty()) {
    StoreHandle store = store_from_url(client, given);
    if (recorded && store->identity() != *recorded) {
      throw WrongStore(kind + " " + name + ": its values are in " + recorded->text() +
                       "; --store names " + store->identity().text());
    }
    return store;
  }
  if (!recorded) return StoreHandle::borrowed(client.default_store());
  std::string configured;
  for (auto& store : deployment_stores(client, store_urls)) {
    if (store->identity() == *recorded) return std::move(store);
    configured += (configured.empty() ? "" : ", ") + store->identity().text();
  }
  throw WrongStore(kind + " " + name + ": its values are in " + recorded->text() +
                   ", which no URL of --stores or AVOUT_STORES names (configured: " + configured +
                   ")");
}

}  // namespace avout::tool
