#pragma once
// The stores a command names by URL (`--store`, `--stores`, AVOUT_STORES), made by the store
// registry: the tool names no kind of store itself, so every registered scheme works.

#include <avout/avout.hpp>
#include <avout/store_registry.hpp>

#include <string>
#include <vector>

namespace avout::tool {

/// The URLs in `lists`, each element holding one or more separated by white space or commas.
/// A comma not followed by a registered scheme belongs to its URL (a PostgreSQL URL may name
/// several hosts: postgresql://a:5432,b:5432/db).
std::vector<std::string> split_store_urls(const std::vector<std::string>& lists);

/// InvalidName (naming the registered schemes) when `store` (empty: none) or a URL in `lists` has a
/// scheme no store is registered for: a usage error found before connecting.
void require_registered_schemes(const std::string& store, const std::vector<std::string>& lists);

/// `argument` as a message may show it: a URL with user info (it may hold a password) is
/// shown by its scheme only ("postgresql://...").
std::string shown_argument(const std::string& argument);

/// The store `url` names (InvalidName for an unregistered scheme or a malformed URL).
StoreHandle store_from_url(Client& client, const std::string& url);

/// The client's own store (zookeeper:) first, then the store of each of `urls`; a URL given
/// twice, or zookeeper: again, adds no second handle of a store.
std::vector<StoreHandle> deployment_stores(Client& client, const std::vector<std::string>& urls);

}  // namespace avout::tool
