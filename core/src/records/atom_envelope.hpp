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
/// Decodes an envelope; CodecError naming `name` when the bytes are not one, Deleted when
/// they are the tombstone of a removed atom.
AtomEnvelope decode_envelope(const Bytes& bytes, const std::string& name);
/// What a removed atom's cell holds from then on: no value, only the mark that it is gone
/// (a compare-and-set racing the removal fails, and nothing recreates the atom).
Bytes encode_atom_tombstone();
/// True when `bytes` is an atom's tombstone.
bool is_atom_tombstone(const Bytes& bytes);

}  // namespace avout::detail
