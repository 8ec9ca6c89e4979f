#include "base/hex.hpp"

#include <avout/codec.hpp>

#include <cstdio>

namespace avout::codec {

namespace {

std::string quoted(std::span<const std::uint8_t> text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string describe_value(Reader& in) {
  const auto tag = static_cast<Tag>(in.byte());
  switch (tag) {
    case Tag::signed_integer: return std::to_string(static_cast<std::int64_t>(in.word()));
    case Tag::unsigned_integer: return std::to_string(in.word());
    case Tag::float64: {
      char text[64];
      std::snprintf(text, sizeof text, "%.17g", std::bit_cast<double>(in.word()));
      return text;
    }
    case Tag::boolean: {
      const auto value = in.byte();
      if (value > 1) throw CodecError("codec: a bool byte must be 0 or 1");
      return value ? "true" : "false";
    }
    case Tag::string: return quoted(in.take(in.length()));
    case Tag::bytes: return "0x" + detail::hex(in.take(in.length()));
    case Tag::user: return "#user 0x" + detail::hex(in.take(in.length()));
    case Tag::list: {
      const std::size_t count = in.length();
      in.enter();
      std::string out = "[";
      for (std::size_t i = 0; i < count; ++i) out += (i ? ", " : "") + describe_value(in);
      in.leave();
      return out + "]";
    }
    case Tag::map: {
      const std::size_t count = in.length();
      in.enter();
      std::string out = "{";
      for (std::size_t i = 0; i < count; ++i) {
        out += i ? ", " : "";
        out += describe_value(in);
        out += ": " + describe_value(in);
      }
      in.leave();
      return out + "}";
    }
    case Tag::optional: {
      const auto present = in.byte();
      if (present > 1) throw CodecError("codec: an optional's flag must be 0 or 1");
      if (!present) return "nil";
      in.enter();
      std::string out = describe_value(in);
      in.leave();
      return out;
    }
  }
  throw CodecError("codec: unknown tag " + std::to_string(static_cast<int>(tag)));
}

}  // namespace

std::string describe(const Bytes& bytes) {
  Reader in(std::span<const std::uint8_t>(bytes.data(), bytes.size()));
  std::string out = describe_value(in);
  if (in.remaining() != 0) throw CodecError("codec: trailing bytes after the value");
  return out;
}

}  // namespace avout::codec
