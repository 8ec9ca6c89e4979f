// Fuzzes the decoder of ZooKeeper lease records (the data of a lease node, written by the
// holder's process and read by every contender): any bytes either decode into a record whose
// encoding decodes to the same record, or give CodecError.
#include "records/lease_record.hpp"

#include <avout/errors.hpp>

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const avout::Bytes bytes(data, data + size);
  try {
    const auto record = avout::detail::decode_lease_record(bytes, "/fuzz/lease");
    const auto again = avout::detail::decode_lease_record(
        avout::detail::encode_lease_record(record), "/fuzz/lease");
    if (again.held != record.held || again.token != record.token ||
        again.duration != record.duration || again.holder != record.holder) {
      __builtin_trap();
    }
  } catch (const avout::CodecError&) {
  }
  return 0;
}
