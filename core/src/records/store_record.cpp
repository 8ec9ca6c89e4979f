#include "records/store_record.hpp"

#include <avout/errors.hpp>

#include <cctype>

namespace avout {

namespace {
constexpr std::size_t longest_store_name = 64;
constexpr std::size_t longest_store_scheme = 32;

bool is_name_character(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
}
}  // namespace

void validate_store_name(const std::string& name, const std::string& what) {
  bool valid = !name.empty() && name.size() <= longest_store_name;
  for (char c : name) valid = valid && is_name_character(c);
  // The name may come from a URL that also holds a password: the message does not quote it.
  if (!valid) {
    throw InvalidName(what + ": a store name is 1 to " + std::to_string(longest_store_name) +
                      " letters, digits, '-', '_' or '.'");
  }
}

namespace detail {

void validate_store_scheme(const std::string& scheme, const std::string& what) {
  bool valid = !scheme.empty() && scheme.size() <= longest_store_scheme &&
               std::isalpha(static_cast<unsigned char>(scheme.front())) != 0;
  for (char c : scheme) {
    valid = valid &&
            (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '-' || c == '.');
  }
  if (!valid) {
    throw InvalidName(what + ": a store scheme is a letter, then letters, digits, '+', '-' or "
                             "'.' (at most " +
                      std::to_string(longest_store_scheme) + ")");
  }
}

Bytes encode_store_record(const StoreIdentity& identity) {
  return to_bytes(identity.scheme + ":" + identity.name);
}

StoreIdentity decode_store_record(const Bytes& data, const std::string& path) {
  const std::string text(data.begin(), data.end());
  const auto colon = text.find(':');
  StoreIdentity identity;
  if (colon != std::string::npos) {
    identity = StoreIdentity{text.substr(0, colon), text.substr(colon + 1)};
  }
  try {
    if (colon == std::string::npos) throw InvalidName("no ':'");
    validate_store_scheme(identity.scheme, path);
    validate_store_name(identity.name, path);
  } catch (const InvalidName&) {
    throw CodecError(path + ": not a store record (scheme:name), " + std::to_string(data.size()) +
                     " bytes");
  }
  return identity;
}

}  // namespace detail
}  // namespace avout
