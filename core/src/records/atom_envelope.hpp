#pragma once
// The bytes every store holds for an atom: a format byte, the write sequence, the ids of the
// last writes and the encoded value. Other processes wrote them, so the decoder takes any
// bytes (fuzz/fuzz_atom_envelope.cpp).

#include <avout/bytes.hpp>
#include <avout/detail/atom_handle.hpp>

#include <cstddef>
#include <string>

namespace avout::detail {

/// How many writer ids an envelope keeps.
inline constexpr std::size_t kept_writers = 8;

/// Encodes an envelope (a version byte, sequence, writer ids, payload).
Bytes encode_envelope(const AtomEnvelope& envelope);
/// Decodes an envelope; CodecError naming `name` when the bytes are not one.
AtomEnvelope decode_envelope(const Bytes& bytes, const std::string& name);

}  // namespace avout::detail
