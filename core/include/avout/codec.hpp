#pragma once
// avout::Codec<T>: how values become bytes in a store and back.
//
// Format (self-describing, so tools can print any built-in value without knowing T): each
// value is one tag byte and a payload.
//   0x01 signed integer    8 bytes little endian (two's complement)
//   0x02 unsigned integer  8 bytes little endian
//   0x03 float64           8 bytes IEEE 754 little endian (float is stored as double)
//   0x04 bool              1 byte, 0 or 1
//   0x05 string            varint length, then the bytes
//   0x06 bytes             varint length, then the bytes
//   0x07 list              varint count, then each element
//   0x08 map               varint count, then key and value alternately (no duplicate keys)
//   0x09 optional          1 byte present flag (0/1), then the value when present
//   0x0a user              varint length, then opaque bytes of a user's own codec
// Built-in codecs: integers, enums (as their underlying integer), float/double, bool,
// std::string, Bytes, std::vector, std::array, std::pair and std::tuple (lists of their
// elements), std::map and std::unordered_map (maps), std::unordered_set (a list with no
// duplicates), std::optional. Unordered containers are written in the order of their
// elements' encodings, so equal containers give equal bytes (compare_and_set compares bytes).
// <avout/json.hpp> adds any type with nlohmann::json's to_json/from_json.
// Varints are LEB128, at most 10 bytes. Decoding checks every length against the bytes left,
// every integer against the target type's range, and nesting depth (64), so malformed input
// gives CodecError, never undefined behaviour or a huge allocation.
//
// A user type opts in with a specialization that writes and reads through the user tag:
//   template <> struct avout::Codec<Point> {
//     static void encode(const Point& p, avout::Bytes& out) {
//       avout::codec::write_user(out, avout::encode(std::vector<long>{p.x, p.y}));
//     }
//     static Point decode(avout::codec::Reader& in) {
//       auto xy = avout::decode<std::vector<long>>(avout::codec::read_user(in));
//       if (xy.size() != 2) throw avout::CodecError("Point: two coordinates expected");
//       return {xy[0], xy[1]};
//     }
//   };

#include <avout/bytes.hpp>
#include <avout/errors.hpp>
#include <avout/export.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace avout {

template <typename T>
struct Codec;

namespace codec {

/// Tag bytes of the format above.
enum class Tag : std::uint8_t {
  signed_integer = 0x01,
  unsigned_integer = 0x02,
  float64 = 0x03,
  boolean = 0x04,
  string = 0x05,
  bytes = 0x06,
  list = 0x07,
  map = 0x08,
  optional = 0x09,
  user = 0x0a,
};

/// The kind of value a tag byte announces, for messages: "an integer", "a string", ...
inline std::string kind_name(std::uint8_t tag) {
  switch (static_cast<Tag>(tag)) {
    case Tag::signed_integer:
    case Tag::unsigned_integer: return "an integer";
    case Tag::float64: return "a floating-point number";
    case Tag::boolean: return "a bool";
    case Tag::string: return "a string";
    case Tag::bytes: return "bytes";
    case Tag::list: return "a list";
    case Tag::map: return "a map";
    case Tag::optional: return "an optional";
    case Tag::user: return "a user type";
  }
  return "an unknown tag " + std::to_string(tag);
}

/// The kind of value `encoded` holds, read from its tag byte ("nothing" when empty).
inline std::string kind_of(std::span<const std::uint8_t> encoded) {
  return encoded.empty() ? std::string("nothing") : kind_name(encoded.front());
}

/// CodecError ("KIND NAME holds a list, not a string as this handle's type") when `stored` is
/// another kind of value than `sample`, an encoded value of the handle's type.
inline void require_same_kind(std::span<const std::uint8_t> stored,
                              std::span<const std::uint8_t> sample, const char* kind,
                              const std::string& name) {
  if (kind_of(stored) != kind_of(sample)) {
    throw CodecError(std::string(kind) + " " + name + " holds " + kind_of(stored) + ", not " +
                     kind_of(sample) + " as this handle's type");
  }
}

/// Deepest nesting of lists, maps and optionals a decoder accepts.
inline constexpr int max_depth = 64;

/// A bounds-checked cursor over encoded bytes; every overrun is a CodecError.
class Reader {
 public:
  /// Reads from `bytes`, which must outlive the reader.
  explicit Reader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  /// One byte.
  std::uint8_t byte() {
    need(1);
    return bytes_[at_++];
  }
  /// `count` raw bytes.
  std::span<const std::uint8_t> take(std::size_t count) {
    need(count);
    auto part = bytes_.subspan(at_, count);
    at_ += count;
    return part;
  }
  /// A little-endian 64-bit word.
  std::uint64_t word() {
    auto part = take(8);
    std::uint64_t value = 0;
    for (int i = 7; i >= 0; --i) value = (value << 8) | part[static_cast<std::size_t>(i)];
    return value;
  }
  /// A LEB128 varint of at most 10 bytes.
  std::uint64_t varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      const std::uint8_t next = byte();
      if (shift == 63 && next > 1) throw CodecError("codec: varint overflows 64 bits");
      value |= std::uint64_t{next & 0x7fu} << shift;
      if ((next & 0x80u) == 0) return value;
    }
    throw CodecError("codec: varint longer than 10 bytes");
  }
  /// A length or count that cannot exceed the bytes left (each item takes at least one).
  std::size_t length() {
    const std::uint64_t value = varint();
    if (value > remaining()) throw CodecError("codec: length exceeds the bytes left");
    return static_cast<std::size_t>(value);
  }
  /// Consumes the tag byte, which must be `expected` (`type` names it for the message).
  void expect(Tag expected, const char* type) {
    const std::uint8_t tag = next_tag(type);
    if (tag != static_cast<std::uint8_t>(expected)) mismatch(type, tag);
  }
  /// Consumes a tag byte; "expected `type`, found nothing" when the input has ended.
  std::uint8_t next_tag(const char* type) {
    if (remaining() == 0)
      throw CodecError(std::string("codec: expected ") + type + ", found nothing");
    return byte();
  }
  /// Throws "expected `type`, found <the kind `tag` announces>".
  [[noreturn]] static void mismatch(const char* type, std::uint8_t tag) {
    throw CodecError(std::string("codec: expected ") + type + ", found " + kind_name(tag));
  }
  /// Reads a list header of exactly `count` elements (pairs, tuples, arrays).
  void expect_list_of(std::size_t count, const char* type) {
    expect(Tag::list, type);
    const std::size_t found = length();
    if (found != count) {
      throw CodecError(std::string("codec: expected ") + type + ", found a list of " +
                       std::to_string(found));
    }
  }
  /// Bytes not yet read.
  std::size_t remaining() const { return bytes_.size() - at_; }
  /// Enters a nested container; CodecError past max_depth.
  void enter() {
    if (++depth_ > max_depth) throw CodecError("codec: nesting deeper than 64");
  }
  /// Leaves a nested container.
  void leave() { --depth_; }

 private:
  void need(std::size_t count) const {
    if (count > remaining()) throw CodecError("codec: truncated value");
  }
  std::span<const std::uint8_t> bytes_;
  std::size_t at_ = 0;
  int depth_ = 0;
};

/// Appends a LEB128 varint.
inline void write_varint(Bytes& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<std::uint8_t>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(value));
}

/// Appends a little-endian 64-bit word.
inline void write_word(Bytes& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

/// Appends a tag and length-prefixed bytes.
inline void write_blob(Bytes& out, Tag tag, const std::uint8_t* data, std::size_t size) {
  out.push_back(static_cast<std::uint8_t>(tag));
  write_varint(out, size);
  out.insert(out.end(), data, data + size);
}

/// Writes a user codec's opaque bytes under the user tag.
inline void write_user(Bytes& out, const Bytes& opaque) {
  write_blob(out, Tag::user, opaque.data(), opaque.size());
}

/// Reads bytes written by write_user.
inline Bytes read_user(Reader& in) {
  in.expect(Tag::user, "a user value");
  auto part = in.take(in.length());
  return Bytes(part.begin(), part.end());
}

/// Renders any encoded value for people: 42, "text", [1, 2], {"a": 1}, nil, 0x0a0b.
AVOUT_API std::string describe(const Bytes& bytes);

}  // namespace codec

/// A type avout can store: it has a Codec specialization.
template <typename T>
concept Encodable = requires(const T& value, Bytes& out, codec::Reader& in) {
  {Codec<T>::encode(value, out)};
  { Codec<T>::decode(in) } -> std::same_as<T>;
};

/// The bytes of `value`.
template <Encodable T>
Bytes encode(const T& value) {
  Bytes out;
  Codec<T>::encode(value, out);
  return out;
}

/// The value encoded in `bytes`; CodecError when they are not exactly one valid T.
template <Encodable T>
T decode(std::span<const std::uint8_t> bytes) {
  codec::Reader in(bytes);
  T value = Codec<T>::decode(in);
  if (in.remaining() != 0) throw CodecError("codec: trailing bytes after the value");
  return value;
}

/// See decode(span).
template <Encodable T>
T decode(const Bytes& bytes) {
  return decode<T>(std::span<const std::uint8_t>(bytes.data(), bytes.size()));
}

namespace codec {

/// decode<T>, with a CodecError naming the object: "atom /x: codec: expected an integer,
/// found a string". `kind` and `name` are only joined when decoding fails.
template <Encodable T>
T decode_named(std::span<const std::uint8_t> bytes, const char* kind, const std::string& name) {
  try {
    return decode<T>(bytes);
  } catch (const CodecError& error) {
    throw CodecError(std::string(kind) + " " + name + ": " + error.what());
  }
}

}  // namespace codec

/// Integers (not bool): stored as 64-bit, range-checked on the way back.
template <std::integral T>
requires(!std::same_as<T, bool>) struct Codec<T> {
  static void encode(const T& value, Bytes& out) {
    if constexpr (std::is_signed_v<T>) {
      out.push_back(static_cast<std::uint8_t>(codec::Tag::signed_integer));
      codec::write_word(out, static_cast<std::uint64_t>(static_cast<std::int64_t>(value)));
    } else {
      out.push_back(static_cast<std::uint8_t>(codec::Tag::unsigned_integer));
      codec::write_word(out, static_cast<std::uint64_t>(value));
    }
  }
  static T decode(codec::Reader& in) {
    const std::uint8_t tag = in.next_tag("an integer");
    if (tag != static_cast<std::uint8_t>(codec::Tag::signed_integer) &&
        tag != static_cast<std::uint8_t>(codec::Tag::unsigned_integer)) {
      codec::Reader::mismatch("an integer", tag);
    }
    const std::uint64_t word = in.word();
    if (tag == static_cast<std::uint8_t>(codec::Tag::signed_integer)) {
      const auto value = static_cast<std::int64_t>(word);
      if (!std::in_range<T>(value)) throw CodecError("codec: integer out of the type's range");
      return static_cast<T>(value);
    }
    if (!std::in_range<T>(word)) throw CodecError("codec: integer out of the type's range");
    return static_cast<T>(word);
  }
};

/// float and double: stored as IEEE double.
template <std::floating_point T>
struct Codec<T> {
  static void encode(const T& value, Bytes& out) {
    out.push_back(static_cast<std::uint8_t>(codec::Tag::float64));
    codec::write_word(out, std::bit_cast<std::uint64_t>(static_cast<double>(value)));
  }
  static T decode(codec::Reader& in) {
    in.expect(codec::Tag::float64, "a floating-point number");
    const double value = std::bit_cast<double>(in.word());
    if constexpr (!std::same_as<T, double>) {
      if (std::isfinite(value) &&
          std::fabs(value) > static_cast<double>(std::numeric_limits<T>::max())) {
        throw CodecError("codec: floating point value out of the type's range");
      }
    }
    return static_cast<T>(value);
  }
};

/// bool: one byte, 0 or 1.
template <>
struct Codec<bool> {
  static void encode(const bool& value, Bytes& out) {
    out.push_back(static_cast<std::uint8_t>(codec::Tag::boolean));
    out.push_back(value ? 1 : 0);
  }
  static bool decode(codec::Reader& in) {
    in.expect(codec::Tag::boolean, "a bool");
    const std::uint8_t value = in.byte();
    if (value > 1) throw CodecError("codec: a bool byte must be 0 or 1");
    return value == 1;
  }
};

/// std::string: length-prefixed bytes.
template <>
struct Codec<std::string> {
  static void encode(const std::string& value, Bytes& out) {
    codec::write_blob(out, codec::Tag::string, reinterpret_cast<const std::uint8_t*>(value.data()),
                      value.size());
  }
  static std::string decode(codec::Reader& in) {
    in.expect(codec::Tag::string, "a string");
    auto part = in.take(in.length());
    return std::string(part.begin(), part.end());
  }
};

/// Bytes (std::vector<std::uint8_t>): length-prefixed raw bytes.
template <>
struct Codec<Bytes> {
  static void encode(const Bytes& value, Bytes& out) {
    codec::write_blob(out, codec::Tag::bytes, value.data(), value.size());
  }
  static Bytes decode(codec::Reader& in) {
    in.expect(codec::Tag::bytes, "bytes");
    auto part = in.take(in.length());
    return Bytes(part.begin(), part.end());
  }
};

/// std::vector of an encodable type (other than bytes): a counted list.
template <Encodable T>
requires(!std::same_as<T, std::uint8_t>) struct Codec<std::vector<T>> {
  static void encode(const std::vector<T>& value, Bytes& out) {
    out.push_back(static_cast<std::uint8_t>(codec::Tag::list));
    codec::write_varint(out, value.size());
    for (const auto& element : value) Codec<T>::encode(element, out);
  }
  static std::vector<T> decode(codec::Reader& in) {
    in.expect(codec::Tag::list, "a list");
    const std::size_t count = in.length();
    in.enter();
    std::vector<T> value;
    value.reserve(count);
    for (std::size_t i = 0; i < count; ++i) value.push_back(Codec<T>::decode(in));
    in.leave();
    return value;
  }
};

namespace codec {
/// Reads a map's entries into `Map` (ordered or not); a repeated key is CodecError.
template <typename Map, typename K, typename V>
Map decode_map_entries(Reader& in) {
  in.expect(Tag::map, "a map");
  const std::size_t count = in.length();
  in.enter();
  Map value;
  for (std::size_t i = 0; i < count; ++i) {
    K key = Codec<K>::decode(in);
    V mapped = Codec<V>::decode(in);
    if (!value.emplace(std::move(key), std::move(mapped)).second) {
      throw CodecError("codec: duplicate map key");
    }
  }
  in.leave();
  return value;
}
}  // namespace codec

/// std::map of encodable keys and values: a counted sequence of pairs, keys unique.
template <Encodable K, Encodable V>
struct Codec<std::map<K, V>> {
  static void encode(const std::map<K, V>& value, Bytes& out) {
    out.push_back(static_cast<std::uint8_t>(codec::Tag::map));
    codec::write_varint(out, value.size());
    for (const auto& [key, mapped] : value) {
      Codec<K>::encode(key, out);
      Codec<V>::encode(mapped, out);
    }
  }
  static std::map<K, V> decode(codec::Reader& in) {
    return codec::decode_map_entries<std::map<K, V>, K, V>(in);
  }
};

/// std::optional of an encodable type: a presence byte, then the value.
template <Encodable T>
struct Codec<std::optional<T>> {
  static void encode(const std::optional<T>& value, Bytes& out) {
    out.push_back(static_cast<std::uint8_t>(codec::Tag::optional));
    out.push_back(value ? 1 : 0);
    if (value) Codec<T>::encode(*value, out);
  }
  static std::optional<T> decode(codec::Reader& in) {
    in.expect(codec::Tag::optional, "an optional");
    const std::uint8_t present = in.byte();
    if (present > 1) throw CodecError("codec: an optional's flag must be 0 or 1");
    if (present == 0) return std::nullopt;
    in.enter();
    std::optional<T> value = Codec<T>::decode(in);
    in.leave();
    return value;
  }
};

namespace codec {

/// Encodes each element of a fixed-size sequence (pair, tuple, array) in order.
template <typename... Elements>
void write_elements(Bytes& out, const Elements&... elements) {
  out.push_back(static_cast<std::uint8_t>(Tag::list));
  write_varint(out, sizeof...(Elements));
  (Codec<Elements>::encode(elements, out), ...);
}

/// Writes `items` (already encoded) under `tag`, sorted by their bytes so equal unordered
/// containers encode equally; each item is one element (a map's key and value, or a set's
/// element and nothing).
inline void write_sorted(Bytes& out, Tag tag, std::vector<std::pair<Bytes, Bytes>>& items) {
  std::sort(items.begin(), items.end());
  out.push_back(static_cast<std::uint8_t>(tag));
  write_varint(out, items.size());
  for (const auto& [first, second] : items) {
    out.insert(out.end(), first.begin(), first.end());
    out.insert(out.end(), second.begin(), second.end());
  }
}

}  // namespace codec

/// Enums: their underlying integer; decoding checks the integer fits that type.
template <typename T>
requires std::is_enum_v<T>
struct Codec<T> {
  static void encode(const T& value, Bytes& out) {
    Codec<std::underlying_type_t<T>>::encode(static_cast<std::underlying_type_t<T>>(value), out);
  }
  static T decode(codec::Reader& in) {
    return static_cast<T>(Codec<std::underlying_type_t<T>>::decode(in));
  }
};

/// std::pair: a list of its two elements.
template <Encodable A, Encodable B>
struct Codec<std::pair<A, B>> {
  static void encode(const std::pair<A, B>& value, Bytes& out) {
    codec::write_elements(out, value.first, value.second);
  }
  static std::pair<A, B> decode(codec::Reader& in) {
    in.expect_list_of(2, "a list of 2 (a pair)");
    in.enter();
    A first = Codec<A>::decode(in);
    B second = Codec<B>::decode(in);
    in.leave();
    return {std::move(first), std::move(second)};
  }
};

/// std::tuple: a list of its elements in order.
template <Encodable... Elements>
struct Codec<std::tuple<Elements...>> {
  static void encode(const std::tuple<Elements...>& value, Bytes& out) {
    std::apply([&](const auto&... elements) { codec::write_elements(out, elements...); }, value);
  }
  static std::tuple<Elements...> decode(codec::Reader& in) {
    const std::string type = "a list of " + std::to_string(sizeof...(Elements)) + " (a tuple)";
    in.expect_list_of(sizeof...(Elements), type.c_str());
    in.enter();
    // Braced initialisation evaluates left to right, matching the encoding order.
    std::tuple<Elements...> value{Codec<Elements>::decode(in)...};
    in.leave();
    return value;
  }
};

/// std::array: a list of exactly N elements.
template <Encodable T, std::size_t N>
struct Codec<std::array<T, N>> {
  static void encode(const std::array<T, N>& value, Bytes& out) {
    out.push_back(static_cast<std::uint8_t>(codec::Tag::list));
    codec::write_varint(out, N);
    for (const auto& element : value) Codec<T>::encode(element, out);
  }
  static std::array<T, N> decode(codec::Reader& in) {
    const std::string type = "a list of " + std::to_string(N) + " (an array)";
    in.expect_list_of(N, type.c_str());
    in.enter();
    std::array<T, N> value{};
    for (auto& element : value) element = Codec<T>::decode(in);
    in.leave();
    return value;
  }
};

/// std::unordered_map: a map, pairs sorted by the key's encoding, keys unique.
template <Encodable K, Encodable V, typename Hash, typename Equal, typename Allocator>
struct Codec<std::unordered_map<K, V, Hash, Equal, Allocator>> {
  using Map = std::unordered_map<K, V, Hash, Equal, Allocator>;
  static void encode(const Map& value, Bytes& out) {
    std::vector<std::pair<Bytes, Bytes>> items;
    items.reserve(value.size());
    for (const auto& [key, mapped] : value)
      items.emplace_back(avout::encode(key), avout::encode(mapped));
    codec::write_sorted(out, codec::Tag::map, items);
  }
  static Map decode(codec::Reader& in) { return codec::decode_map_entries<Map, K, V>(in); }
};

/// std::unordered_set: a list sorted by the elements' encodings, no duplicates.
template <Encodable T, typename Hash, typename Equal, typename Allocator>
struct Codec<std::unordered_set<T, Hash, Equal, Allocator>> {
  using Set = std::unordered_set<T, Hash, Equal, Allocator>;
  static void encode(const Set& value, Bytes& out) {
    std::vector<std::pair<Bytes, Bytes>> items;
    items.reserve(value.size());
    for (const auto& element : value) items.emplace_back(avout::encode(element), Bytes{});
    codec::write_sorted(out, codec::Tag::list, items);
  }
  static Set decode(codec::Reader& in) {
    in.expect(codec::Tag::list, "a list (a set)");
    const std::size_t count = in.length();
    in.enter();
    Set value;
    for (std::size_t i = 0; i < count; ++i) {
      if (!value.insert(Codec<T>::decode(in)).second)
        throw CodecError("codec: duplicate set element");
    }
    in.leave();
    return value;
  }
};

}  // namespace avout
