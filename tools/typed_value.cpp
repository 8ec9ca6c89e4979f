#include "typed_value.hpp"

#include "inspect.hpp"

#include <charconv>
#include <limits>
#include <type_traits>

namespace avout::tool {

namespace {

template <typename Number>
Number parse_number(const std::string& text, const char* type) {
  Number number{};
  const char* end = text.data() + text.size();
  const auto [stopped, error] = std::from_chars(text.data(), end, number);
  if (error == std::errc::result_out_of_range) {
    std::string range;
    if constexpr (std::is_integral_v<Number>) {
      range = " (" + std::to_string(std::numeric_limits<Number>::min()) + " to " +
              std::to_string(std::numeric_limits<Number>::max()) + ")";
    }
    throw BadValue("'" + text + "' is out of range for " + type + range);
  }
  if (error != std::errc() || stopped != end) throw BadValue("'" + text + "' is not a " + type);
  return number;
}

}  // namespace

TypedValue parse_value(const std::string& text, const std::string& type) {
  if (type == "long") return parse_number<long>(text, "long");
  if (type == "double") return parse_number<double>(text, "double");
  if (type == "string") return text;
  if (type == "bool") {
    if (text == "true" || text == "1") return true;
    if (text == "false" || text == "0") return false;
    throw BadValue("'" + text + "' is not a bool (true, false, 1 or 0)");
  }
  throw BadValue("unknown type '" + type + "' (long, double, string, bool)");
}

std::string type_of(const Bytes& encoded) {
  if (!encoded.empty()) {
    switch (static_cast<codec::Tag>(encoded.front())) {
      case codec::Tag::signed_integer:
      case codec::Tag::unsigned_integer: return "long";
      case codec::Tag::float64: return "double";
      case codec::Tag::string: return "string";
      case codec::Tag::boolean: return "bool";
      default: break;
    }
  }
  throw BadValue("the stored value is " + codec::kind_of(encoded) +
                 ", which set cannot write (long, double, string, bool)");
}

std::optional<Bytes> stored_atom_value(Client& client, Store& store, const std::string& name) {
  try {
    return atom_value(client, store, name);
  } catch (const NotFound&) {
    return std::nullopt;
  }
}

void set_atom(Client& client, Store& store, const std::string& name, const TypedValue& value,
              const std::optional<Bytes>& stored) {
  std::visit(
      [&](const auto& typed) {
        using T = std::decay_t<decltype(typed)>;
        // Its readers decode with their own type: a value of another kind would break them.
        if (stored && codec::kind_of(*stored) != codec::kind_of(encode(typed))) {
          throw BadValue("atom " + name + " holds " + codec::kind_of(*stored) + ", not " +
                         codec::kind_of(encode(typed)) + "; not changed");
        }
        auto atom = client.atom<T>(name, typed, store);
        // Created only if still absent: another creator may have come first since the read.
        if (stored || atom.deref() != typed) atom.reset(typed);
      },
      value);
}

}  // namespace avout::tool
