#pragma once
// Checks of text a store may keep as is (records/stored_value.cpp): valid UTF-8 that a
// PostgreSQL text column accepts, and RFC 8259 JSON documents.

#include <cstdint>
#include <span>

namespace avout::detail {

/// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
/// U+10FFFF) holding no NUL byte.
bool is_storable_text(std::span<const std::uint8_t> text);
/// True when `text` is one JSON document (RFC 8259, surrounding whitespace allowed) nested
/// at most 512 deep; deeper documents count as not JSON.
bool is_json_document(std::span<const std::uint8_t> text);

}  // namespace avout::detail
