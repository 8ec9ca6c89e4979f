#include "records/stored_text.hpp"

#include <cstddef>

namespace avout::detail {

bool is_storable_text(std::span<const std::uint8_t> text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const std::uint8_t lead = text[i];
    if (lead == 0) return false;
    if (lead < 0x80) {
      ++i;
      continue;
    }
    std::size_t extra = 0;
    std::uint32_t point = 0;
    if (lead >= 0xc2 && lead <= 0xdf) {
      extra = 1;
      point = lead & 0x1fu;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      extra = 2;
      point = lead & 0x0fu;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      extra = 3;
      point = lead & 0x07u;
    } else {
      return false;  // a continuation byte, an overlong two-byte lead, or past U+10FFFF
    }
    if (text.size() - i - 1 < extra) return false;
    for (std::size_t k = 1; k <= extra; ++k) {
      const std::uint8_t next = text[i + k];
      if ((next & 0xc0u) != 0x80u) return false;
      point = (point << 6) | (next & 0x3fu);
    }
    if ((extra == 2 && point < 0x800) || (extra == 3 && (point < 0x10000 || point > 0x10ffff)))
      return false;                                        // overlong, or past the last code point
    if (point >= 0xd800 && point <= 0xdfff) return false;  // a surrogate
    i += extra + 1;
  }
  return true;
}

namespace {

// A recursive-descent recognizer of RFC 8259 over bytes.
class JsonScan {
 public:
  explicit JsonScan(std::span<const std::uint8_t> text) : text_(text) {}

  bool document() {
    space();
    if (!value(0)) return false;
    space();
    return at_ == text_.size();
  }

 private:
  static constexpr int max_depth = 512;

  bool more() const { return at_ < text_.size(); }
  std::uint8_t peek() const { return text_[at_]; }
  void space() {
    while (more() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++at_;
  }
  bool eat(std::uint8_t c) {
    if (!more() || peek() != c) return false;
    ++at_;
    return true;
  }
  bool word(const char* literal) {
    for (; *literal; ++literal)
      if (!eat(static_cast<std::uint8_t>(*literal))) return false;
    return true;
  }
  static bool digit(std::uint8_t c) { return c >= '0' && c <= '9'; }
  bool digits() {
    if (!more() || !digit(peek())) return false;
    while (more() && digit(peek())) ++at_;
    return true;
  }
  static bool hex(std::uint8_t c) {
    return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  }

  bool number() {
    eat('-');
    if (eat('0')) {
      // no leading zeros
    } else if (!digits()) {
      return false;
    }
    if (eat('.') && !digits()) return false;
    if (more() && (peek() == 'e' || peek() == 'E')) {
      ++at_;
      if (!eat('+')) eat('-');
      if (!digits()) return false;
    }
    return true;
  }

  bool string() {
    if (!eat('"')) return false;
    while (more()) {
      const std::uint8_t c = text_[at_++];
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c != '\\') continue;
      if (!more()) return false;
      const std::uint8_t escaped = text_[at_++];
      if (escaped == 'u') {
        for (int k = 0; k < 4; ++k)
          if (!more() || !hex(text_[at_++])) return false;
      } else if (escaped != '"' && escaped != '\\' && escaped != '/' && escaped != 'b' &&
                 escaped != 'f' && escaped != 'n' && escaped != 'r' && escaped != 't') {
        return false;
      }
    }
    return false;
  }

  bool members(int depth, std::uint8_t close, bool keyed) {
    space();
    if (eat(close)) return true;
    for (;;) {
      space();
      if (keyed) {
        if (!string()) return false;
        space();
        if (!eat(':')) return false;
        space();
      }
      if (!value(depth + 1)) return false;
      space();
      if (eat(close)) return true;
      if (!eat(',')) return false;
    }
  }

  bool value(int depth) {
    if (depth > max_depth || !more()) return false;
    switch (peek()) {
      case '{': ++at_; return members(depth, '}', true);
      case '[': ++at_; return members(depth, ']', false);
      case '"': return string();
      case 't': return word("true");
      case 'f': return word("false");
      case 'n': return word("null");
      default: return number();
    }
  }

  std::span<const std::uint8_t> text_;
  std::size_t at_ = 0;
};

}  // namespace

bool is_json_document(std::span<const std::uint8_t> text) { return JsonScan(text).document(); }

}  // namespace avout::detail
