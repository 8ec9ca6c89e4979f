#include "records/atom_envelope.hpp"
#include "records/wire.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

namespace {
constexpr std::uint8_t envelope_format = 1;
constexpr std::uint8_t tombstone_format = 2;  // the whole tombstone: one byte
}  // namespace

Bytes encode_envelope(const AtomEnvelope& envelope) {
  WireWriter out;
  out.u8(envelope_format);
  out.u64(envelope.sequence);
  out.u8(static_cast<std::uint8_t>(envelope.recent_writers.size()));
  for (auto writer : envelope.recent_writers) out.u64(writer);
  out.raw(envelope.payload);
  return out.take();
}

AtomEnvelope decode_envelope(const Bytes& bytes, const std::string& name) {
  if (is_atom_tombstone(bytes)) throw Deleted("atom " + name + " was deleted");
  WireReader in(bytes, "atom " + name + ": stored bytes are not an avout atom value");
  if (in.u8() != envelope_format) in.fail("unknown format");
  AtomEnvelope envelope;
  envelope.sequence = in.u64();
  const std::size_t writers = in.u8();
  if (writers > kept_writers) in.fail("too many writer ids");
  for (std::size_t i = 0; i < writers; ++i) envelope.recent_writers.push_back(in.u64());
  envelope.payload = in.rest();
  return envelope;
}

}  // namespace avout::detail

namespace avout::detail {

Bytes encode_atom_tombstone() { return Bytes{tombstone_format}; }

bool is_atom_tombstone(const Bytes& bytes) {
  return bytes.size() == 1 && bytes[0] == tombstone_format;
}

}  // namespace avout::detail
