#pragma once
// Values typed on the command line: parsed strictly before anything is created, and checked
// against the kind of value an atom already holds.

#include <avout/avout.hpp>

#include <optional>
#include <string>
#include <variant>

namespace avout::tool {

/// A value or type the command line refuses (exit code 2).
struct BadValue : Error {
  using Error::Error;
};

/// A value of one of the types `set` accepts.
using TypedValue = std::variant<long, double, std::string, bool>;

/// `text` as `type` (long, double, string, bool): the whole text must parse, numbers must be in
/// range, bools are true, false, 1 or 0. BadValue saying why otherwise.
TypedValue parse_value(const std::string& text, const std::string& type);

/// The type name (long, double, string, bool) whose values are encoded like `encoded`;
/// BadValue for kinds `set` cannot write (lists, maps, user types...).
std::string type_of(const Bytes& encoded);

/// The encoded value the atom `name` holds in `store`, or nothing when it does not exist.
std::optional<Bytes> stored_atom_value(Client& client, Store& store, const std::string& name);

/// Stores `value` in the atom `name` (creating it with that value when absent). BadValue,
/// before writing, when `stored` holds another kind of value.
void set_atom(Client& client, Store& store, const std::string& name, const TypedValue& value,
              const std::optional<Bytes>& stored);

}  // namespace avout::tool
