// Fuzzes the decoders of ref heads and barging tags (data of znodes any client may write).
#include "records/stm_records.hpp"

#include <avout/errors.hpp>

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const avout::Bytes bytes(data, data + size);
  try {
    const auto head = avout::detail::decode_head(bytes, "/fuzz/head");
    if (!(avout::detail::decode_head(avout::detail::encode_head(head), "/fuzz/head").newest ==
          head.newest)) {
      __builtin_trap();
    }
  } catch (const avout::CodecError&) {
  } catch (const avout::Deleted&) {
    if (!avout::detail::is_head_tombstone(bytes)) __builtin_trap();  // only the tombstone is
  }
  try {
    if (auto tag = avout::detail::decode_tag(bytes, "/fuzz/tag")) {
      if (!(avout::detail::decode_tag(avout::detail::encode_tag(*tag), "/fuzz/tag") == tag))
        __builtin_trap();
    }
  } catch (const avout::CodecError&) {
  }
  (void)avout::detail::writer_of(std::string(bytes.begin(), bytes.end()));
  return 0;
}
