#include "store_urls.hpp"

#include <builtin_stores.hpp>

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

namespace avout::tool {

namespace {

// True when `text` starts with "<scheme>:" for a registered scheme (compared without case)
// and no digit follows the colon: "postgres:5432" is the next host of a PostgreSQL multi-host
// URL, not a URL of its own.
bool starts_with_registered_scheme(const std::string& text,
                                   const std::vector<std::string>& schemes) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return false;
  if (colon + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[colon + 1])))
    return false;
  std::string scheme = text.substr(0, colon);
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::binary_search(schemes.begin(), schemes.end(), scheme);
}

}  // namespace

std::vector<std::string> split_store_urls(const std::vector<std::string>& lists) {
  register_builtin_stores();
  const auto schemes = store_schemes();
  std::vector<std::string> urls;
  for (const auto& list : lists) {
    std::istringstream words(list);
    for (std::string word; words >> word;) {
      std::size_t start = 0;
      for (auto comma = word.find(','); comma != std::string::npos;
           comma = word.find(',', comma + 1)) {
        const std::string rest = word.substr(comma + 1);
        if (!rest.empty() && !starts_with_registered_scheme(rest, schemes)) continue;
        if (comma > start) urls.push_back(word.substr(start, comma - start));
        start = comma + 1;
      }
      if (start < word.size()) urls.push_back(word.substr(start));
    }
  }
  return urls;
}

void require_registered_schemes(const std::string& store, const std::vector<std::string>& lists) {
  register_builtin_stores();
  if (!store.empty()) require_registered_scheme(store);
  for (const auto& url : split_store_urls(lists)) require_registered_scheme(url);
}

std::string shown_argument(const std::string& argument) {
  const auto scheme_end = argument.find("://");
  if (scheme_end == std::string::npos || argument.find('@', scheme_end) == std::string::npos)
    return argument;
  return argument.substr(0, scheme_end) + "://...";
}

StoreHandle store_from_url(Client& client, const std::string& url) {
  register_builtin_stores();
  return make_store(client, url);
}

std::vector<StoreHandle> deployment_stores(Client& client, const std::vector<std::string>& urls) {
  std::vector<StoreHandle> stores;
  stores.push_back(StoreHandle::borrowed(client.default_store()));
  std::set<std::string> seen;
  for (const auto& url : urls) {
    if (!seen.insert(url).second) continue;
    StoreHandle store = store_from_url(client, url);
    if (&store.get() != &client.default_store()) stores.push_back(std::move(store));
  }
  return stores;
}

}  // namespace avout::tool
