// Splits and joins the bytes a store keeps (<avout/stored_value.hpp>). Other processes, and
// any tool with access to the store, wrote the parts, so join takes any input
// (fuzz/fuzz_stored_value.cpp checks the round trip).
#include "records/atom_envelope.hpp"
#include "records/stored_text.hpp"

#include <avout/codec.hpp>
#include <avout/errors.hpp>
#include <avout/stored_value.hpp>

#include <algorithm>
#include <charconv>
#include <optional>
#include <vector>

namespace avout {

namespace {

// Consumes one value of the codec's form; CodecError when `in` holds none.
void skip_value(codec::Reader& in) {
  using codec::Tag;
  const auto tag = static_cast<Tag>(in.byte());
  switch (tag) {
    case Tag::signed_integer:
    case Tag::unsigned_integer:
    case Tag::float64: in.take(8); return;
    case Tag::boolean:
      if (in.byte() > 1) throw CodecError("codec: a bool byte must be 0 or 1");
      return;
    case Tag::string:
    case Tag::bytes:
    case Tag::user: in.take(in.length()); return;
    case Tag::list:
    case Tag::map: {
      const bool map = tag == Tag::map;
      const std::size_t items = in.length();
      in.enter();
      for (std::size_t i = 0; i < items; ++i) {
        skip_value(in);
        if (map) skip_value(in);  // a map's items are key and value
      }
      in.leave();
      return;
    }
    case Tag::optional: {
      const std::uint8_t present = in.byte();
      if (present > 1) throw CodecError("codec: an optional's flag must be 0 or 1");
      if (present == 1) {
        in.enter();
        skip_value(in);
        in.leave();
      }
      return;
    }
  }
  throw CodecError("codec: unknown tag");
}

bool is_codec_value(std::span<const std::uint8_t> bytes) {
  try {
    codec::Reader in(bytes);
    skip_value(in);
    return in.remaining() == 0;
  } catch (const CodecError&) {
    return false;
  }
}

// The text of `bytes` when they are exactly one blob under `tag` whose length is written in
// the fewest varint bytes (so that writing the text back gives the same bytes).
std::optional<std::span<const std::uint8_t>> canonical_blob(std::span<const std::uint8_t> bytes,
                                                            codec::Tag tag) {
  if (bytes.empty() || bytes.front() != static_cast<std::uint8_t>(tag)) return std::nullopt;
  try {
    codec::Reader in(bytes.subspan(1));
    const std::uint64_t length = in.varint();
    if (length != in.remaining()) return std::nullopt;
    Bytes header;
    codec::write_varint(header, length);
    if (header.size() + 1 + length != bytes.size()) return std::nullopt;
    return bytes.subspan(1 + header.size());
  } catch (const CodecError&) {
    return std::nullopt;
  }
}

// The split of a value's codec bytes (no envelope).
StoredValue split_value(std::span<const std::uint8_t> bytes) {
  auto as = [&](std::string_view format, std::span<const std::uint8_t> payload) {
    return StoredValue{std::string(format), "", Bytes(payload.begin(), payload.end())};
  };
  if (auto text = canonical_blob(bytes, codec::Tag::string);
      text && detail::is_storable_text(*text)) {
    return as(stored_format::text, *text);
  }
  if (auto text = canonical_blob(bytes, codec::Tag::user);
      text && detail::is_storable_text(*text) && detail::is_json_document(*text)) {
    return as(stored_format::json, *text);
  }
  return as(is_codec_value(bytes) ? stored_format::avout : stored_format::opaque, bytes);
}

// The codec bytes of a split value (no envelope).
Bytes join_value(const StoredValue& value) {
  const auto& f = value.format;
  if (f == stored_format::text || f == stored_format::json) {
    Bytes out;
    codec::write_blob(out, f == stored_format::text ? codec::Tag::string : codec::Tag::user,
                      value.payload.data(), value.payload.size());
    return out;
  }
  if (f == stored_format::avout || f == stored_format::opaque) return value.payload;
  throw CodecError("stored value: unknown format \"" + f + "\"");
}

std::string bookkeeping_of(const detail::AtomEnvelope& envelope) {
  std::string text = std::to_string(envelope.sequence);
  for (auto writer : envelope.recent_writers) text += " " + std::to_string(writer);
  return text;
}

// The envelope fields written as bookkeeping_of writes them; CodecError otherwise.
detail::AtomEnvelope envelope_of(const std::string& text) {
  auto fail = [&]() -> CodecError {
    return CodecError("stored value: malformed atom bookkeeping \"" + text + "\"");
  };
  std::vector<std::uint64_t> numbers;
  std::size_t at = 0;
  for (;;) {
    const std::size_t end = std::min(text.find(' ', at), text.size());
    std::uint64_t number = 0;
    const auto [stop, error] = std::from_chars(text.data() + at, text.data() + end, number);
    if (error != std::errc() || stop != text.data() + end ||
        std::to_string(number) != text.substr(at, end - at)) {
      throw fail();
    }
    numbers.push_back(number);
    if (end == text.size()) break;
    at = end + 1;
  }
  if (numbers.size() > detail::kept_writers + 1) throw fail();
  detail::AtomEnvelope envelope;
  envelope.sequence = numbers.front();
  envelope.recent_writers.assign(numbers.begin() + 1, numbers.end());
  return envelope;
}

}  // namespace

StoredValue split_stored_value(StoredKind kind, std::span<const std::uint8_t> bytes) {
  if (kind == StoredKind::point) return split_value(bytes);
  const Bytes whole(bytes.begin(), bytes.end());
  if (detail::is_atom_tombstone(whole)) return StoredValue{std::string(stored_format::deleted), "", {}};
  detail::AtomEnvelope envelope;
  try {
    envelope = detail::decode_envelope(whole, "");
  } catch (const CodecError&) {
    return StoredValue{std::string(stored_format::opaque), "", Bytes(bytes.begin(), bytes.end())};
  }
  StoredValue value = split_value(envelope.payload);
  value.bookkeeping = bookkeeping_of(envelope);
  return value;
}

Bytes join_stored_value(StoredKind kind, const StoredValue& value) {
  if (value.format == stored_format::deleted) {
    if (kind != StoredKind::atom || !value.bookkeeping.empty() || !value.payload.empty())
      throw CodecError("stored value: only an atom is deleted, and its tombstone holds nothing");
    return detail::encode_atom_tombstone();
  }
  if (kind == StoredKind::point || value.bookkeeping.empty()) {
    if (!value.bookkeeping.empty()) throw CodecError("stored value: a point has no bookkeeping");
    if (kind == StoredKind::atom && value.format != stored_format::opaque)
      throw CodecError("stored value: an atom's " + value.format + " value lacks bookkeeping");
    return join_value(value);
  }
  detail::AtomEnvelope envelope = envelope_of(value.bookkeeping);
  envelope.payload = join_value(value);
  return detail::encode_envelope(envelope);
}

}  // namespace avout
