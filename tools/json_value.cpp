#include "json_value.hpp"

#include <cmath>

namespace avout::tool {

namespace {

using Json = nlohmann::ordered_json;

std::string base64(std::span<const std::uint8_t> bytes) {
  static constexpr char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t left = bytes.size() - i;
    const std::uint32_t group = (std::uint32_t{bytes[i]} << 16) |
                                (left > 1 ? std::uint32_t{bytes[i + 1]} << 8 : 0) |
                                (left > 2 ? std::uint32_t{bytes[i + 2]} : 0);
    out += alphabet[(group >> 18) & 63];
    out += alphabet[(group >> 12) & 63];
    out += left > 1 ? alphabet[(group >> 6) & 63] : '=';
    out += left > 2 ? alphabet[group & 63] : '=';
  }
  return out;
}

// One value read from `in`; `type` gets its type name, `has_bytes` is set by any bytes in it.
Json read_value(codec::Reader& in, std::string& type, bool& has_bytes) {
  std::string inner;  // the type of a nested value, unused
  switch (static_cast<codec::Tag>(in.byte())) {
    case codec::Tag::signed_integer: type = "long"; return static_cast<std::int64_t>(in.word());
    case codec::Tag::unsigned_integer: type = "unsigned"; return in.word();
    case codec::Tag::float64: {
      type = "double";
      const double number = std::bit_cast<double>(in.word());
      if (std::isnan(number)) return "nan";
      if (std::isinf(number)) return number > 0 ? "inf" : "-inf";
      return number;
    }
    case codec::Tag::boolean: {
      type = "bool";
      const auto flag = in.byte();
      if (flag > 1) throw CodecError("codec: a bool byte must be 0 or 1");
      return flag == 1;
    }
    case codec::Tag::string: {
      type = "string";
      const auto text = in.take(in.length());
      return std::string(text.begin(), text.end());
    }
    case codec::Tag::bytes:
      type = "bytes";
      has_bytes = true;
      return base64(in.take(in.length()));
    case codec::Tag::user: {
      const auto text = in.take(in.length());
      Json json = Json::parse(text.begin(), text.end(), nullptr, false);
      if (!json.is_discarded()) {
        type = "json";  // <avout/json.hpp> stores JSON text under the user tag
        return json;
      }
      type = "user";
      has_bytes = true;
      return base64(text);
    }
    case codec::Tag::list: {
      type = "list";
      const std::size_t count = in.length();
      in.enter();
      Json list = Json::array();
      for (std::size_t i = 0; i < count; ++i) list.push_back(read_value(in, inner, has_bytes));
      in.leave();
      return list;
    }
    case codec::Tag::map: {
      type = "map";
      const std::size_t count = in.length();
      in.enter();
      Json pairs = Json::array();
      bool string_keys = true;
      for (std::size_t i = 0; i < count; ++i) {
        Json key = read_value(in, inner, has_bytes);
        string_keys = string_keys && inner == "string";
        pairs.push_back(Json::array({std::move(key), read_value(in, inner, has_bytes)}));
      }
      in.leave();
      if (!string_keys) return pairs;
      Json object = Json::object();
      for (auto& pair : pairs) object[pair[0].get<std::string>()] = std::move(pair[1]);
      return object;
    }
    case codec::Tag::optional: {
      type = "optional";
      const auto present = in.byte();
      if (present > 1) throw CodecError("codec: an optional's flag must be 0 or 1");
      if (present == 0) return nullptr;
      in.enter();
      Json value = read_value(in, inner, has_bytes);
      in.leave();
      return value;
    }
  }
  throw CodecError("codec: unknown tag");
}

}  // namespace

JsonValue json_value(const Bytes& encoded) {
  codec::Reader in(std::span<const std::uint8_t>(encoded.data(), encoded.size()));
  JsonValue out;
  out.value = read_value(in, out.type, out.has_bytes);
  if (in.remaining() != 0) throw CodecError("codec: trailing bytes after the value");
  return out;
}

nlohmann::ordered_json value_fields(const Bytes& encoded) {
  try {
    auto typed = json_value(encoded);
    Json fields{{"type", typed.type}, {"value", std::move(typed.value)}};
    if (typed.has_bytes) fields["encoding"] = bytes_encoding;
    return fields;
  } catch (const CodecError& error) {
    return Json{{"type", nullptr},
                {"value", nullptr},
                {"value_error", std::string("undecodable: ") + error.what()}};
  }
}

nlohmann::ordered_json missing_value_fields() {
  return Json{{"type", nullptr}, {"value", nullptr}, {"value_error", "missing from the store"}};
}

std::string plain_text(const nlohmann::ordered_json& value) {
  return value.is_string() ? value.get<std::string>() : dump_line(value);
}

std::string dump_line(const nlohmann::ordered_json& json) {
  return json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace avout::tool
