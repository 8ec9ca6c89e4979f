// Fuzzes the decoder of named send nodes (written by any process that sends to the agent).
#include "records/named_send.hpp"

#include <avout/errors.hpp>

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const avout::Bytes bytes(data, data + size);
  try {
    const auto send = avout::detail::decode_named_send(bytes, "/fuzz/send");
    // The format has one encoding per send: what decodes encodes back to the same bytes.
    const auto encoded =
        avout::detail::encode_named_send(send.action, send.arguments, send.blocking);
    if (encoded != bytes) __builtin_trap();
    const auto again = avout::detail::decode_named_send(encoded, "/fuzz/send");
    if (again.action != send.action || again.arguments != send.arguments ||
        again.blocking != send.blocking) {
      __builtin_trap();
    }
  } catch (const avout::CodecError&) {
  }
  return 0;
}
