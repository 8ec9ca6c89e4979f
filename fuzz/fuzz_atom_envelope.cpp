// Fuzzes the decoder of atom envelopes (the bytes every store holds for an atom).
#include "records/atom_envelope.hpp"

#include <avout/errors.hpp>

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const avout::Bytes bytes(data, data + size);
  try {
    const auto envelope = avout::detail::decode_envelope(bytes, "/fuzz/atom");
    const auto again =
        avout::detail::decode_envelope(avout::detail::encode_envelope(envelope), "/fuzz/atom");
    if (again.sequence != envelope.sequence || again.payload != envelope.payload ||
        again.recent_writers != envelope.recent_writers) {
      __builtin_trap();
    }
  } catch (const avout::CodecError&) {
  } catch (const avout::Deleted&) {
    if (!avout::detail::is_atom_tombstone(bytes)) __builtin_trap();  // only the tombstone is
  }
  return 0;
}
