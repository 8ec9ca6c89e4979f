#pragma once
// The bytes the core hands a store, split into parts other tools can read
// (docs/stored-layout.md): a format name, the core's bookkeeping and the payload. A string
// value's payload is its text as is, a JSON-codec value's payload its JSON document as is; any
// other value keeps avout's binary form. A store may keep the parts apart (the Redis and
// PostgreSQL stores do) and join them back when read: join_stored_value(kind,
// split_stored_value(kind, b)) == b for every b, also for bytes the core never writes.

#include <avout/bytes.hpp>
#include <avout/export.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace avout {

/// Which cell the bytes are for: an atom's (an envelope around the value) or a ref's or
/// agent's point (the value alone).
enum class StoredKind { atom, point };

/// Format names of a split value's payload.
namespace stored_format {
/// UTF-8 text without NUL: a std::string value's characters as is.
inline constexpr std::string_view text = "text";
/// A JSON document (UTF-8, RFC 8259): a value of the JSON codec (<avout/json.hpp>) as is.
inline constexpr std::string_view json = "json";
/// Any other value in avout's binary codec form (<avout/codec.hpp>), unchanged.
inline constexpr std::string_view avout = "avout";
/// Bytes that are no value avout writes there, unchanged (bookkeeping empty).
inline constexpr std::string_view opaque = "opaque";
/// A removed atom's tombstone (Client::remove_atom): no payload, no bookkeeping.
inline constexpr std::string_view deleted = "deleted";
}  // namespace stored_format

/// The parts of one stored value.
struct StoredValue {
  std::string format;       ///< one of stored_format's names
  std::string bookkeeping;  ///< an atom's "<write sequence> <writer id>..." (decimal); else ""
  Bytes payload;            ///< the value's bytes in `format`
};

/// Splits the bytes the core gave a store for a `kind` cell; never throws on any input.
AVOUT_API StoredValue split_stored_value(StoredKind kind, std::span<const std::uint8_t> bytes);
/// The bytes `value` was split from; CodecError when its parts are no split's result.
AVOUT_API Bytes join_stored_value(StoredKind kind, const StoredValue& value);

}  // namespace avout
