#include "records/lease_record.hpp"
#include "records/wire.hpp"

namespace avout::detail {

namespace {
constexpr std::uint8_t record_format = 1;
}  // namespace

Bytes encode_lease_record(const LeaseRecord& record) {
  WireWriter out;
  out.u8(record_format);
  out.u8(record.held ? 1 : 0);
  out.u64(record.token);
  out.u64(static_cast<std::uint64_t>(record.duration.count()));
  out.text(record.holder);
  return out.take();
}

LeaseRecord decode_lease_record(const Bytes& data, const std::string& path) {
  using std::chrono::milliseconds;
  WireReader in(data, "zookeeper lease node " + path);
  if (in.u8() != record_format) in.fail("unknown format");
  LeaseRecord record;
  record.held = in.u8() != 0;
  record.token = in.u64();
  record.duration = milliseconds(static_cast<milliseconds::rep>(in.u64()));
  record.holder = in.text();
  if (!in.done()) in.fail("trailing bytes");
  if (record.duration < milliseconds::zero() || record.duration > longest_lease_duration) {
    in.fail("duration out of range");
  }
  return record;
}

}  // namespace avout::detail
