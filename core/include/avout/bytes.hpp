#pragma once
// The byte buffer every store and codec exchanges.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace avout {

/// Raw bytes as stored: what a Codec produces and a backend keeps.
using Bytes = std::vector<std::uint8_t>;

/// Copies a character string into bytes (for C APIs that speak char*).
inline Bytes to_bytes(std::string_view text) { return Bytes(text.begin(), text.end()); }

/// Views bytes as characters without copying (for C APIs that speak char*).
inline std::string_view as_chars(const Bytes& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace avout
