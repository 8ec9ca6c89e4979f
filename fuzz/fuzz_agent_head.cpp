// Fuzzes the decoder of agent heads.
#include "records/agent_head.hpp"

#include <avout/errors.hpp>

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const avout::Bytes bytes(data, data + size);
  try {
    const auto head = avout::detail::decode_agent_head(bytes, "/fuzz/agent");
    const auto again =
        avout::detail::decode_agent_head(avout::detail::encode_agent_head(head), "/fuzz/agent");
    if (!(again.point == head.point) || again.error != head.error) __builtin_trap();
  } catch (const avout::CodecError&) {
  } catch (const avout::Deleted&) {
    if (!avout::detail::is_agent_tombstone(bytes)) __builtin_trap();  // only the tombstone is
  }
  return 0;
}
