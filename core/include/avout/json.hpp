#pragma once
// Opt-in: include this header and any type with nlohmann::json's to_json/from_json (found by
// argument-dependent lookup, e.g. from NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE) is Encodable: it is
// stored as its JSON text under the user tag, so no hand-written Codec<T> is needed.
// nlohmann::json itself is Encodable too. Needs nlohmann/json 3.x on the include path (CMake:
// find_package(nlohmann_json 3) and link nlohmann_json::nlohmann_json).
//
//   struct Order { std::string id; long quantity; };
//   NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Order, id, quantity)
//   auto order = client.atom<Order>("/orders/latest", Order{"a1", 3});
//
// Types with a built-in codec (strings, numbers, containers) keep it: only class types without
// one take the JSON path. Text that does not parse, or JSON from_json refuses, is CodecError.

#include <avout/codec.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <type_traits>

namespace avout {

namespace codec {

namespace json_lookup {
// Blocks the unqualified names so only argument-dependent lookup finds the user's functions.
void to_json() = delete;
void from_json() = delete;

/// A type whose own namespace provides to_json(json&, const T&) and from_json(const json&, T&).
template <typename T>
concept user_json = std::is_class_v<T> && requires(nlohmann::json& j, const T& in, T& out) {
  to_json(j, in);
  from_json(static_cast<const nlohmann::json&>(j), out);
};
}  // namespace json_lookup

/// Writes `value` as JSON text under the user tag.
inline void write_json(Bytes& out, const nlohmann::json& value) {
  const std::string text = value.dump();
  write_blob(out, Tag::user, reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
}

/// Reads JSON text written by write_json; CodecError when it does not parse.
inline nlohmann::json read_json(Reader& in) {
  in.expect(Tag::user, "a user type (JSON)");
  const auto text = in.take(in.length());
  nlohmann::json value = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (value.is_discarded())
    throw CodecError("codec: expected JSON, found text that does not parse");
  return value;
}

}  // namespace codec

/// nlohmann::json: its text under the user tag.
template <>
struct Codec<nlohmann::json> {
  static void encode(const nlohmann::json& value, Bytes& out) { codec::write_json(out, value); }
  static nlohmann::json decode(codec::Reader& in) { return codec::read_json(in); }
};

/// Any class type with ADL to_json/from_json: its JSON text under the user tag.
template <typename T>
requires codec::json_lookup::user_json<T>
struct Codec<T> {
  static void encode(const T& value, Bytes& out) {
    nlohmann::json json;
    to_json(json, value);
    codec::write_json(out, json);
  }
  static T decode(codec::Reader& in) {
    const nlohmann::json json = codec::read_json(in);
    try {
      return json.template get<T>();
    } catch (const nlohmann::json::exception& error) {
      throw CodecError(std::string("codec: JSON of the wrong shape: ") + error.what());
    }
  }
};

}  // namespace avout
