// Fuzzes the decoder of store records (the data of an object's node under stores/, written by
// the process that attached it first and read by every other): any bytes either decode into
// an identity whose encoding is the same bytes, or give CodecError.
#include "records/store_record.hpp"

#include <avout/errors.hpp>

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const avout::Bytes bytes(data, data + size);
  try {
    const auto identity = avout::detail::decode_store_record(bytes, "/fuzz/store");
    if (avout::detail::encode_store_record(identity) != bytes) __builtin_trap();
  } catch (const avout::CodecError&) {
  }
  return 0;
}
