#pragma once
// Stores made from a URL: one registry from URL scheme to the factory of that kind of store.
// `zookeeper:` (the client's own default store) is always registered; each backend library
// registers its schemes with a call of its own (avout::redis::register_store_schemes(),
// avout::postgres::register_store_schemes()), and a program registers its own kinds the same
// way. Registration is explicit, never a static initializer, so it works alike for static and
// shared libraries. Thread safe.

#include <avout/backend.hpp>
#include <avout/export.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace avout {

class Client;

/// A store made from a URL: owned (a Redis or PostgreSQL store) or borrowed from the client
/// (`zookeeper:`, its default store, which the client owns and which outlives no client).
class StoreHandle {
 public:
  /// Owns `store`.
  explicit StoreHandle(std::unique_ptr<Store> store)
      : owned_(std::move(store)), store_(owned_.get()) {}
  /// Refers to `store` without owning it; `store` must outlive the handle.
  static StoreHandle borrowed(Store& store) { return StoreHandle(store); }

  /// The store.
  Store& get() const { return *store_; }
  /// The store.
  Store& operator*() const { return *store_; }
  /// The store.
  Store* operator->() const { return store_; }
  /// True when the handle destroys the store with itself.
  bool owns() const { return owned_ != nullptr; }

 private:
  explicit StoreHandle(Store& store) : store_(&store) {}
  std::unique_ptr<Store> owned_;
  Store* store_;
};

/// Makes the store a URL names; `client` is the client the store is used with.
using StoreFactory = std::function<StoreHandle(Client& client, const std::string& url)>;

/// Makes URLs "<scheme>:..." (scheme: a letter, then letters, digits, '+', '-' or '.';
/// compared without case) go to `factory`, replacing an earlier registration of it.
/// InvalidName when the scheme is not of that form.
AVOUT_API void register_store_scheme(const std::string& scheme, StoreFactory factory);

/// The store `url` names, made by the factory of its scheme. InvalidName when the URL has no
/// scheme or no store is registered for it (the message names the scheme and the registered
/// ones, never the rest of the URL, which may hold a password); the factory's own errors
/// (InvalidName for a malformed URL) pass through.
AVOUT_API StoreHandle make_store(Client& client, const std::string& url);

/// Throws the InvalidName make_store would when no store is registered for the scheme of
/// `url`, without making a store: a program can check its URLs before it connects.
AVOUT_API void require_registered_scheme(const std::string& url);

/// The registered schemes, sorted.
AVOUT_API std::vector<std::string> store_schemes();

}  // namespace avout
