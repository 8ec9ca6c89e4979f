#include "base/hex.hpp"

namespace avout::detail {

namespace {
constexpr char digit_of[] = "0123456789abcdef";
}  // namespace

std::string hex(std::uint64_t value, std::size_t digits) {
  std::string text(digits, '0');
  for (std::size_t i = digits; i > 0 && value != 0; --i, value >>= 4)
    text[i - 1] = digit_of[value & 15];
  return text;
}

std::string hex(std::span<const std::uint8_t> bytes) {
  std::string text;
  text.reserve(2 * bytes.size());
  for (auto byte : bytes) {
    text += digit_of[byte >> 4];
    text += digit_of[byte & 15];
  }
  return text;
}

std::string session_hex(std::int64_t session) {
  return hex(static_cast<std::uint64_t>(session), session_hex_digits);
}

}  // namespace avout::detail
