// Fuzzes the split of stored bytes into format, bookkeeping and payload: joining the parts
// must give the bytes back, for atoms and for points, whatever the bytes.
#include <avout/errors.hpp>
#include <avout/stored_value.hpp>

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const avout::Bytes bytes(data, data + size);
  for (auto kind : {avout::StoredKind::atom, avout::StoredKind::point}) {
    const avout::StoredValue value = avout::split_stored_value(kind, bytes);
    if (avout::join_stored_value(kind, value) != bytes) __builtin_trap();
  }
  return 0;
}
