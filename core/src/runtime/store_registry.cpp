#include <avout/client.hpp>
#include <avout/errors.hpp>
#include <avout/store_registry.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>

namespace avout {

namespace {

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool valid_scheme(const std::string& scheme) {
  if (scheme.empty() || !std::isalpha(static_cast<unsigned char>(scheme.front()))) return false;
  return std::all_of(scheme.begin(), scheme.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '+' || c == '-' || c == '.';
  });
}

// A function-local static: built on first use, whichever translation unit asks first.
struct Registry {
  std::mutex mutex;
  std::map<std::string, StoreFactory> factories;

  Registry() {
    factories.emplace("zookeeper", [](Client& client, const std::string& url) {
      if (lowercase(url) != "zookeeper:") {
        throw InvalidName(
            "a zookeeper store URL is just \"zookeeper:\" (the client's own "
            "ZooKeeper and root)");
      }
      return StoreHandle::borrowed(client.default_store());
    });
  }
  static Registry& instance() {
    static Registry registry;
    return registry;
  }
};

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const auto& word : words) text += (text.empty() ? "" : ", ") + word;
  return text;
}

}  // namespace

void register_store_scheme(const std::string& scheme, StoreFactory factory) {
  if (!valid_scheme(scheme)) throw InvalidName("not a URL scheme: \"" + scheme + "\"");
  if (!factory) throw InvalidName("store scheme " + scheme + ": no factory given");
  auto& registry = Registry::instance();
  std::lock_guard lock(registry.mutex);
  registry.factories.insert_or_assign(lowercase(scheme), std::move(factory));
}

namespace {

// The factory of the scheme of `url` (a copy: it is called outside the lock, as it may
// connect or register further schemes); InvalidName naming the registered schemes when none.
StoreFactory factory_of(const std::string& url) {
  const auto colon = url.find(':');
  const std::string scheme = colon == std::string::npos ? "" : lowercase(url.substr(0, colon));
  if (!valid_scheme(scheme)) {
    throw InvalidName("a store URL starts with a scheme (" + joined(store_schemes()) + ")");
  }
  StoreFactory factory;
  {
    auto& registry = Registry::instance();
    std::lock_guard lock(registry.mutex);
    if (auto found = registry.factories.find(scheme); found != registry.factories.end()) {
      factory = found->second;
    }
  }
  if (!factory) {
    throw InvalidName("no store is registered for the URL scheme \"" + scheme +
                      "\" (registered: " + joined(store_schemes()) +
                      "); link its backend and call its register_store_schemes()");
  }
  return factory;
}

}  // namespace

StoreHandle make_store(Client& client, const std::string& url) {
  return factory_of(url)(client, url);
}

void require_registered_scheme(const std::string& url) { (void)factory_of(url); }

std::vector<std::string> store_schemes() {
  auto& registry = Registry::instance();
  std::lock_guard lock(registry.mutex);
  std::vector<std::string> schemes;
  for (const auto& [scheme, factory] : registry.factories) schemes.push_back(scheme);
  return schemes;
}

}  // namespace avout
