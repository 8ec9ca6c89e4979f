// The permit count record of a semaphore's folder node.
#include "recipes/semaphore_record.hpp"

#include <charconv>
#include <string>
#include <string_view>

namespace avout::detail {

namespace {
constexpr std::string_view record_prefix = "permits=";
}

Bytes encode_permits(std::size_t permits) {
  const std::string text = std::string(record_prefix) + std::to_string(permits);
  return Bytes(text.begin(), text.end());
}

std::optional<std::size_t> decode_permits(const Bytes& record) {
  const std::string_view text(reinterpret_cast<const char*>(record.data()), record.size());
  if (!text.starts_with(record_prefix)) return std::nullopt;
  const std::string_view digits = text.substr(record_prefix.size());
  std::size_t permits = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), permits);
  if (error != std::errc{} || end != digits.data() + digits.size() || permits == 0) {
    return std::nullopt;
  }
  return permits;
}

}  // namespace avout::detail
