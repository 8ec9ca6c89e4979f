// Fuzzes the value codec: any bytes either decode into each type or give CodecError, and
// describe() renders them or gives CodecError. Anything else (a crash, a sanitizer report,
// another exception) is a bug.
#include <avout/codec.hpp>
#include <avout/errors.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {
template <typename T>
void try_decode(const avout::Bytes& bytes) {
  try {
    T value = avout::decode<T>(bytes);
    // What decodes must encode back to something that decodes to the same value.
    if (!(avout::decode<T>(avout::encode(value)) == value)) __builtin_trap();
  } catch (const avout::CodecError&) {
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const avout::Bytes bytes(data, data + size);
  try_decode<long>(bytes);
  try_decode<std::uint8_t>(bytes);
  try_decode<bool>(bytes);
  try_decode<std::string>(bytes);
  try_decode<avout::Bytes>(bytes);
  try_decode<std::vector<long>>(bytes);
  try_decode<std::optional<std::string>>(bytes);
  try_decode<std::map<std::string, std::vector<std::int32_t>>>(bytes);
  try {
    (void)avout::codec::describe(bytes);
  } catch (const avout::CodecError&) {
  }
  return 0;
}
