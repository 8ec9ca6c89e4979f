#pragma once
// Stored values as typed JSON, for `-o json` and for the value `get` prints: an integer is a
// JSON number, a string a JSON string, a JSON-codec value the JSON itself, bytes a base64
// string; the type is a short machine name ("long", "string", "json", "bytes"...).

#include <avout/avout.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace avout::tool {

/// How reports print bytes: the "encoding" a report with bytes in its value declares.
inline constexpr const char* bytes_encoding = "base64";

/// A stored value as typed JSON.
struct JsonValue {
  /// long, unsigned, double, bool, string, bytes, list, map, optional, json or user (a user
  /// codec's bytes that are not JSON text).
  std::string type;
  /// The value: a number, bool, string or null; a list as an array; a map as an object when
  /// every key is a string, else as an array of [key, value] pairs; bytes and user bytes as
  /// base64 strings; a non-finite double as the string "nan", "inf" or "-inf".
  nlohmann::ordered_json value;
  bool has_bytes = false;  ///< some part of `value` is base64 bytes
};

/// `encoded` (one value of avout's codec format) as typed JSON; CodecError when malformed.
JsonValue json_value(const Bytes& encoded);

/// The fields a report gives a stored value, in order: "type" and "value" (as json_value()),
/// "encoding" when the value holds bytes, and for bytes that do not decode a null type and
/// value and "value_error" saying why.
nlohmann::ordered_json value_fields(const Bytes& encoded);

/// The fields of a value its store no longer holds: null type and value, and "value_error".
nlohmann::ordered_json missing_value_fields();

/// `value` as one line of text: a string as it is (no quotes), anything else as JSON.
std::string plain_text(const nlohmann::ordered_json& value);

/// `json` as one line, invalid UTF-8 in strings replaced rather than refused.
std::string dump_line(const nlohmann::ordered_json& json);

}  // namespace avout::tool
