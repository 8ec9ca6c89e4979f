#pragma once
// What the ZooKeeper lease strategy keeps in a key's lease node (backends/zookeeper,
// zookeeper_lease.cpp): a format byte, held, token, duration and holder. Contenders in other
// processes read it, so the decoder takes any bytes (fuzz/fuzz_lease_record.cpp).

#include <avout/bytes.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace avout::detail {

/// What the lease node of a key holds.
struct LeaseRecord {
  bool held = false;                      ///< whether someone holds the lease now
  std::uint64_t token = 0;                ///< the newest hold's token; kept when released
  std::chrono::milliseconds duration{0};  ///< the holder's: contenders wait this (+ margin)
  std::string holder;  ///< unique per acquire: finds a write whose reply was lost
};

/// The longest duration a lease record may carry (a longer one is malformed).
inline constexpr std::chrono::hours longest_lease_duration{24 * 366};

/// Encodes `record` as the lease node's data.
Bytes encode_lease_record(const LeaseRecord& record);
/// Decodes the data of the lease node at `path`; CodecError naming `path` when the bytes are
/// not a lease record (unknown format, truncated, trailing bytes, duration out of range).
LeaseRecord decode_lease_record(const Bytes& data, const std::string& path);

}  // namespace avout::detail
