#pragma once
// The wire formats of refs and transactions (docs/transactions.md): a ref head's record, a
// barging tag, and the writer prefix of point, marker and attempt ids. Decoded from bytes any
// client may write: fuzzed by fuzz/fuzz_stm_records.cpp.

#include <avout/backend.hpp>
#include <avout/bytes.hpp>

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace avout::detail {

/// One older committed version of a ref: the zxid of its commit and where its value is.
struct HeadEntry {
  std::int64_t zxid = 0;  ///< commit zxid
  Point point;            ///< where the value is stored
};

/// A ref head's data. The newest version's commit zxid is the head node's own mzxid.
struct HeadRecord {
  Point newest;                    ///< point of the newest committed value
  std::vector<HeadEntry> history;  ///< older versions, newest first
  std::uint32_t keep = 0;          ///< how many older versions commits keep (adaptive history)
};

/// Encodes a head record.
Bytes encode_head(const HeadRecord& record);
/// Decodes a head record; CodecError naming `path` when malformed, Deleted when it is the
/// tombstone of a removed ref (so no reader, commit or creator goes past one).
HeadRecord decode_head(const Bytes& bytes, const std::string& path);
/// The head of a removed ref: kept forever, so the name is never reused at version 0 (an
/// old version check would pass again) and every later read of it throws Deleted.
Bytes encode_head_tombstone();
/// True when `bytes` is a ref head's tombstone.
bool is_head_tombstone(const Bytes& bytes);
/// True when `head` names `point`, as its newest value or in its history.
bool names(const HeadRecord& head, const Point& point);

/// The age of one dosync across its attempts (transactions.md rule 10): the older transaction wins.
struct TransactionAge {
  std::int64_t first_read_point = 0;  ///< read point of its first attempt
  std::int64_t session = 0;           ///< session that started it
  std::uint64_t counter = 0;          ///< per-client sequence number
  /// Older first: lower read point, then session, then counter.
  auto operator<=>(const TransactionAge&) const = default;
};

/// Encodes a barging tag: the age of the transaction that claims a ref (empty: unclaimed).
Bytes encode_tag(const TransactionAge& age);
/// Decodes a barging tag; nullopt for an unclaimed (empty) tag; CodecError when malformed.
std::optional<TransactionAge> decode_tag(const Bytes& bytes, const std::string& path);

/// The session id a point, marker or attempt id was written by; nullopt when the id has no
/// writer prefix (then gc never erases it).
std::optional<std::int64_t> writer_of(const std::string& id);

}  // namespace avout::detail
