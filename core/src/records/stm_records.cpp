#include "records/stm_records.hpp"

#include "base/hex.hpp"
#include "records/wire.hpp"

#include <avout/errors.hpp>

#include <algorithm>

namespace avout::detail {

namespace {
constexpr std::uint8_t head_format = 2;
constexpr std::uint8_t head_tombstone_format = 3;  // the whole record: one byte
constexpr std::uint8_t tag_format = 1;
}  // namespace

Bytes encode_head(const HeadRecord& record) {
  WireWriter out;
  out.u8(head_format);
  out.text(record.newest.id);
  out.u64(record.keep);
  out.u64(record.history.size());
  for (const auto& entry : record.history) {
    out.u64(static_cast<std::uint64_t>(entry.zxid));
    out.text(entry.point.id);
  }
  return out.take();
}

HeadRecord decode_head(const Bytes& bytes, const std::string& path) {
  if (is_head_tombstone(bytes)) throw Deleted("ref head " + path + ": the ref was deleted");
  WireReader in(bytes, "ref head " + path);
  if (in.u8() != head_format) in.fail("unknown format");
  HeadRecord record;
  record.newest.id = in.text();
  const std::uint64_t keep = in.u64();
  if (keep > 1u << 20) in.fail("kept history");
  record.keep = static_cast<std::uint32_t>(keep);
  const std::uint64_t count = in.u64();
  if (count > bytes.size()) in.fail("history count");
  for (std::uint64_t i = 0; i < count; ++i) {
    HeadEntry entry;
    entry.zxid = static_cast<std::int64_t>(in.u64());
    entry.point.id = in.text();
    record.history.push_back(std::move(entry));
  }
  if (!in.done()) in.fail("trailing bytes");
  return record;
}

Bytes encode_head_tombstone() { return Bytes{head_tombstone_format}; }

bool is_head_tombstone(const Bytes& bytes) {
  return bytes.size() == 1 && bytes[0] == head_tombstone_format;
}

Bytes encode_tag(const TransactionAge& age) {
  WireWriter out;
  out.u8(tag_format);
  out.u64(static_cast<std::uint64_t>(age.first_read_point));
  out.u64(static_cast<std::uint64_t>(age.session));
  out.u64(age.counter);
  return out.take();
}

std::optional<TransactionAge> decode_tag(const Bytes& bytes, const std::string& path) {
  if (bytes.empty()) return std::nullopt;
  WireReader in(bytes, "barging tag " + path);
  if (in.u8() != tag_format) in.fail("unknown format");
  TransactionAge age;
  age.first_read_point = static_cast<std::int64_t>(in.u64());
  age.session = static_cast<std::int64_t>(in.u64());
  age.counter = in.u64();
  if (!in.done()) in.fail("trailing bytes");
  return age;
}

std::optional<std::int64_t> writer_of(const std::string& id) {
  if (id.size() <= session_hex_digits || id[session_hex_digits] != '-') return std::nullopt;
  std::uint64_t session = 0;
  for (std::size_t i = 0; i < session_hex_digits; ++i) {
    const char c = id[i];
    int digit = 0;
    if (c >= '0' && c <= '9')
      digit = c - '0';
    else if (c >= 'a' && c <= 'f')
      digit = c - 'a' + 10;
    else
      return std::nullopt;
    session = session * 16 + static_cast<std::uint64_t>(digit);
  }
  return static_cast<std::int64_t>(session);
}

bool names(const HeadRecord& head, const Point& point) {
  return head.newest == point ||
         std::any_of(head.history.begin(), head.history.end(),
                     [&](const HeadEntry& older) { return older.point == point; });
}

}  // namespace avout::detail
