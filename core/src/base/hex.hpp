#pragma once
// The one hex formatter of the core: ids in node names and bytes in descriptions.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace avout::detail {

/// `value` as `digits` lowercase hex digits, zero-padded (16: every 64-bit value fits).
std::string hex(std::uint64_t value, std::size_t digits = 16);
/// `bytes` as lowercase hex, two digits a byte, no prefix.
std::string hex(std::span<const std::uint8_t> bytes);

/// Hex digits of a session id in point ids and liveness node names.
inline constexpr std::size_t session_hex_digits = 16;
/// A session id as point ids and liveness node names spell it (16 lowercase hex digits).
std::string session_hex(std::int64_t session);

}  // namespace avout::detail
