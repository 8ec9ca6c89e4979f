#pragma once
// Little-endian fixed-width fields for avout's own small records (atom envelopes, lease
// records, ref heads, agent heads).
// Reading past the end throws CodecError naming what was being read.

#include <avout/bytes.hpp>
#include <avout/errors.hpp>

#include <cstdint>
#include <string>

namespace avout::detail {

class WireWriter {
 public:
  void u8(std::uint8_t value) { out_.push_back(value); }
  void u64(std::uint64_t value) {
    for (int shift = 0; shift < 64; shift += 8)
      out_.push_back(static_cast<std::uint8_t>(value >> shift));
  }
  void text(const std::string& value) {
    u64(value.size());
    out_.insert(out_.end(), value.begin(), value.end());
  }
  void raw(const Bytes& value) { out_.insert(out_.end(), value.begin(), value.end()); }
  Bytes take() { return std::move(out_); }

 private:
  Bytes out_;
};

class WireReader {
 public:
  WireReader(const Bytes& in, std::string what) : in_(in), what_(std::move(what)) {}
  std::uint8_t u8() {
    need(1);
    return in_[at_++];
  }
  std::uint64_t u64() {
    need(8);
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 8) value |= std::uint64_t{in_[at_++]} << shift;
    return value;
  }
  std::string text() {
    const std::uint64_t size = u64();
    need(size);
    std::string value(in_.begin() + static_cast<std::ptrdiff_t>(at_),
                      in_.begin() + static_cast<std::ptrdiff_t>(at_ + size));
    at_ += size;
    return value;
  }
  Bytes rest() {
    Bytes value(in_.begin() + static_cast<std::ptrdiff_t>(at_), in_.end());
    at_ = in_.size();
    return value;
  }
  bool done() const { return at_ == in_.size(); }
  [[noreturn]] void fail(const std::string& why) const {
    throw CodecError(what_ + ": malformed (" + why + ")");
  }

 private:
  void need(std::uint64_t size) const {
    if (size > in_.size() - at_) fail("truncated");
  }
  const Bytes& in_;
  std::string what_;
  std::size_t at_ = 0;
};

}  // namespace avout::detail
