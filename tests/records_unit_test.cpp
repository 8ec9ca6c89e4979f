// The record codecs of core/src/records as functions over plain data, no server: round trips,
// the exact bytes other processes read, and truncated, oversized and garbage input rejected
// with CodecError. (The value codec has its own tests: codec_test.cpp.)
#include "records/atom_envelope.hpp"
#include "records/lease_record.hpp"
#include "records/lock_policy_record.hpp"
#include "records/store_record.hpp"
#include "records/wire.hpp"

#include <avout/codec.hpp>
#include <avout/errors.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using avout::Bytes;
using avout::CodecError;
using avout::Deleted;
using namespace avout::detail;
using std::chrono::milliseconds;

// The message of the CodecError `decode` throws ("no CodecError" when it throws none).
std::string rejection(const std::function<void()>& decode) {
  try {
    decode();
  } catch (const CodecError& error) {
    return error.what();
  }
  return "no CodecError";
}

Bytes prefix(const Bytes& bytes, std::size_t length) {
  return Bytes(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length));
}

// Random byte strings of up to 64 bytes, and valid encodings with a few bytes changed or cut.
template <typename Check>
void for_garbage(const Bytes& seed, Check check) {
  std::mt19937 random(20261127);
  for (int round = 0; round < 20000; ++round) {
    Bytes bytes;
    if (round % 2 == 0) {
      bytes.resize(random() % 65);
      for (auto& b : bytes) b = static_cast<std::uint8_t>(random());
    } else {
      bytes = seed;
      for (int edit = 0; edit < 3 && !bytes.empty(); ++edit) {
        const auto at = random() % bytes.size();
        if (random() % 4 == 0)
          bytes.resize(at);
        else
          bytes[at] = static_cast<std::uint8_t>(random());
      }
    }
    check(bytes);
  }
}

AtomEnvelope envelope_of(std::uint64_t sequence, std::vector<std::uint64_t> writers,
                         Bytes payload) {
  AtomEnvelope envelope;
  envelope.sequence = sequence;
  envelope.recent_writers = std::move(writers);
  envelope.payload = std::move(payload);
  return envelope;
}

bool same(const AtomEnvelope& a, const AtomEnvelope& b) {
  return a.sequence == b.sequence && a.recent_writers == b.recent_writers && a.payload == b.payload;
}

bool same(const LeaseRecord& a, const LeaseRecord& b) {
  return a.held == b.held && a.token == b.token && a.duration == b.duration && a.holder == b.holder;
}

}  // namespace

TEST_CASE("wire: fixed-width fields are little-endian, text is length then bytes") {
  WireWriter out;
  out.u8(0xab);
  out.u64(0x0102030405060708);
  out.text("hi");
  out.raw(Bytes{0xee});
  const Bytes bytes = out.take();
  CHECK(bytes == Bytes{0xab, 8, 7, 6, 5, 4, 3, 2, 1, 2, 0, 0, 0, 0, 0, 0, 0, 'h', 'i', 0xee});

  WireReader in(bytes, "test record");
  CHECK(in.u8() == 0xab);
  CHECK(in.u64() == 0x0102030405060708);
  CHECK(in.text() == "hi");
  CHECK_FALSE(in.done());
  CHECK(in.rest() == Bytes{0xee});
  CHECK(in.done());
  CHECK(in.rest().empty());
}

TEST_CASE("wire: reading past the end or failing is CodecError naming the record") {
  const Bytes seven{1, 2, 3, 4, 5, 6, 7};
  CHECK(rejection([&] { WireReader(seven, "test record").u64(); }) ==
        "test record: malformed (truncated)");
  CHECK(rejection([&] { WireReader(Bytes{}, "test record").u8(); }) ==
        "test record: malformed (truncated)");
  CHECK(rejection([&] { WireReader(seven, "test record").fail("why"); }) ==
        "test record: malformed (why)");
  // A text claiming 2^64 - 1 bytes in a 9-byte input: rejected before anything is allocated.
  Bytes lying(8, 0xff);
  lying.push_back('x');
  CHECK(rejection([&] { WireReader(lying, "test record").text(); }) ==
        "test record: malformed (truncated)");
}

TEST_CASE("atom envelope: round trips with 0 to 8 writer ids and any payload") {
  for (std::size_t writers = 0; writers <= kept_writers; ++writers) {
    CAPTURE(writers);
    std::vector<std::uint64_t> ids;
    for (std::size_t i = 0; i < writers; ++i)
      ids.push_back(std::numeric_limits<std::uint64_t>::max() - i);
    for (const Bytes& payload : {Bytes{}, Bytes{0}, avout::encode(std::string("value"))}) {
      const auto envelope = envelope_of(writers * 1000 + 1, ids, payload);
      CHECK(same(decode_envelope(encode_envelope(envelope), "/a"), envelope));
    }
  }
}

TEST_CASE("atom envelope: the bytes are format 1, sequence, writer count and ids, payload") {
  const Bytes bytes = encode_envelope(envelope_of(258, {7}, Bytes{0xaa, 0xbb}));
  CHECK(bytes == Bytes{1, 2, 1, 0, 0, 0, 0, 0, 0, 1, 7, 0, 0, 0, 0, 0, 0, 0, 0xaa, 0xbb});
}

TEST_CASE("atom envelope: a cut header, an unknown format or too many writer ids is CodecError") {
  const Bytes full = encode_envelope(envelope_of(3, {1, 2}, Bytes{9, 9}));
  const std::size_t header = 1 + 8 + 1 + 2 * 8;
  for (std::size_t length = 0; length < header; ++length) {
    CAPTURE(length);
    CHECK(rejection([&] { decode_envelope(prefix(full, length), "/a"); }) ==
          "atom /a: stored bytes are not an avout atom value: malformed (truncated)");
  }
  // The payload is the rest: a cut there is a shorter payload, not an error.
  CHECK(decode_envelope(prefix(full, header + 1), "/a").payload == Bytes{9});

  Bytes other_format = full;
  other_format[0] = 2;
  CHECK(rejection([&] { decode_envelope(other_format, "/a"); }) ==
        "atom /a: stored bytes are not an avout atom value: malformed (unknown format)");

  Bytes too_many = encode_envelope(envelope_of(3, std::vector<std::uint64_t>(kept_writers, 5), {}));
  too_many[9] = static_cast<std::uint8_t>(kept_writers + 1);
  too_many.insert(too_many.end(), 8, 0);
  CHECK(rejection([&] { decode_envelope(too_many, "/a"); }) ==
        "atom /a: stored bytes are not an avout atom value: malformed (too many writer ids)");
  CHECK_THROWS_AS(decode_envelope(avout::to_bytes("not an envelope"), "/a"), CodecError);
}

TEST_CASE(
    "atom envelope: garbage decodes to what encodes back the same, or is CodecError (Deleted: "
    "the tombstone)") {
  for_garbage(encode_envelope(envelope_of(5, {1, 2, 3}, Bytes{4, 5})), [](const Bytes& bytes) {
    try {
      const auto envelope = decode_envelope(bytes, "/a");
      CHECK(encode_envelope(envelope) == bytes);
    } catch (const CodecError&) {
    } catch (const Deleted&) {
      CHECK(is_atom_tombstone(bytes));  // only the tombstone is
    }
  });
}

TEST_CASE("atom envelope: a removed atom's tombstone is one byte that decodes as Deleted") {
  const Bytes tombstone = encode_atom_tombstone();
  CHECK(tombstone == Bytes{2});
  CHECK(is_atom_tombstone(tombstone));
  CHECK_THROWS_AS(decode_envelope(tombstone, "/a"), Deleted);
  CHECK_FALSE(is_atom_tombstone(encode_envelope(AtomEnvelope{1, {}, Bytes{2}})));
  CHECK_THROWS_AS(decode_envelope(Bytes{2, 0}, "/a"), CodecError);  // no format 2 envelope
}

TEST_CASE("lease record: round trips at the edges of every field") {
  for (const bool held : {false, true}) {
    for (const auto token : {std::uint64_t{0}, std::numeric_limits<std::uint64_t>::max()}) {
      for (const milliseconds duration : {milliseconds(0), milliseconds(longest_lease_duration)}) {
        for (const std::string& holder : {std::string(), std::string(300, 'h')}) {
          const LeaseRecord record{held, token, duration, holder};
          CHECK(same(decode_lease_record(encode_lease_record(record), "/l/k"), record));
        }
      }
    }
  }
}

TEST_CASE("lease record: the bytes are format 1, held, token, duration in ms, holder") {
  const Bytes bytes = encode_lease_record(LeaseRecord{true, 2, milliseconds(300), "h"});
  CHECK(bytes == Bytes{1, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0x2c, 1, 0,  0,
                       0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,    0, 'h'});
}

TEST_CASE("lease record: truncated, trailing, unknown and out-of-range input is CodecError") {
  const Bytes full = encode_lease_record(LeaseRecord{true, 7, milliseconds(1500), "holder-1"});
  for (std::size_t length = 0; length < full.size(); ++length) {
    CAPTURE(length);
    CHECK(rejection([&] { decode_lease_record(prefix(full, length), "/leases/k"); }) ==
          "zookeeper lease node /leases/k: malformed (truncated)");
  }
  Bytes trailing = full;
  trailing.push_back(0);
  CHECK(rejection([&] { decode_lease_record(trailing, "/leases/k"); }) ==
        "zookeeper lease node /leases/k: malformed (trailing bytes)");
  Bytes other_format = full;
  other_format[0] = 0;
  CHECK(rejection([&] { decode_lease_record(other_format, "/leases/k"); }) ==
        "zookeeper lease node /leases/k: malformed (unknown format)");

  const auto with_duration = [](std::int64_t ms) {
    return encode_lease_record(LeaseRecord{true, 1, milliseconds(ms), "h"});
  };
  const auto longest = milliseconds(longest_lease_duration).count();
  CHECK(decode_lease_record(with_duration(longest), "/leases/k").duration.count() == longest);
  for (const std::int64_t ms :
       {longest + 1, std::int64_t{-1}, std::numeric_limits<std::int64_t>::min()}) {
    CAPTURE(ms);
    CHECK(rejection([&] { decode_lease_record(with_duration(ms), "/leases/k"); }) ==
          "zookeeper lease node /leases/k: malformed (duration out of range)");
  }
}

TEST_CASE("lease record: garbage decodes to a record that round-trips, or is CodecError") {
  for_garbage(
      encode_lease_record(LeaseRecord{true, 9, milliseconds(2000), "holder"}),
      [](const Bytes& bytes) {
        try {
          const auto record = decode_lease_record(bytes, "/leases/k");
          CHECK(same(decode_lease_record(encode_lease_record(record), "/leases/k"), record));
        } catch (const CodecError&) {
        }
      });
}

TEST_CASE("lock policy record: each policy is its name in plain text") {
  using avout::WriterPolicy;
  CHECK(encode_writer_policy(WriterPolicy::hard) == avout::to_bytes("hard"));
  CHECK(encode_writer_policy(WriterPolicy::soft) == avout::to_bytes("soft"));
  CHECK(encode_writer_policy(WriterPolicy::timed_soft) == avout::to_bytes("timed_soft"));
  for (const auto policy : {WriterPolicy::hard, WriterPolicy::soft, WriterPolicy::timed_soft}) {
    CHECK(decode_writer_policy(encode_writer_policy(policy)) == writer_policy_name(policy));
  }
}

TEST_CASE("lock policy record: any bytes decode as they are, for the mismatch to show") {
  CHECK(decode_writer_policy(Bytes{}).empty());
  CHECK(decode_writer_policy(Bytes{'x', 0, 0xff}) == std::string("x\0\xff", 3));
}

TEST_CASE("describe: malformed values are CodecError at every cut and on bad tags or flags") {
  const auto full =
      avout::encode(std::map<std::string, std::optional<bool>>{{"k", true}, {"n", {}}});
  CHECK(avout::codec::describe(full) == "{\"k\": true, \"n\": nil}");
  for (std::size_t length = 0; length < full.size(); ++length) {
    CAPTURE(length);
    CHECK_THROWS_AS(avout::codec::describe(prefix(full, length)), CodecError);
  }
  Bytes trailing = full;
  trailing.push_back(0);
  CHECK(rejection([&] { avout::codec::describe(trailing); }) ==
        "codec: trailing bytes after the value");
  CHECK(rejection([&] {
          avout::codec::describe(Bytes{0x04, 2});
        }) == "codec: a bool byte must be 0 or 1");
  CHECK(rejection([&] {
          avout::codec::describe(Bytes{0x09, 2});
        }) == "codec: an optional's flag must be 0 or 1");
  CHECK(rejection([&] { avout::codec::describe(Bytes{0x00}); }) == "codec: unknown tag 0");
  CHECK(rejection([&] { avout::codec::describe(Bytes{0x0b}); }) == "codec: unknown tag 11");
}

TEST_CASE("describe: strings are quoted with quotes, backslashes and control bytes escaped") {
  CHECK(avout::codec::describe(avout::encode(std::string("a\"b\\c\x01\x7f"))) ==
        "\"a\\\"b\\\\c\\x01\\x7f\"");
  CHECK(avout::codec::describe(avout::encode(std::uint64_t{18446744073709551615u})) ==
        "18446744073709551615");
  CHECK(avout::codec::describe(avout::encode(-5L)) == "-5");
  CHECK(avout::codec::describe(avout::encode(0.5)) == "0.5");
  CHECK(avout::codec::describe(avout::encode(std::vector<std::vector<int>>{{}, {1}})) ==
        "[[], [1]]");
}

TEST_CASE("store record: \"scheme:name\" as plain text, round trips") {
  using avout::detail::decode_store_record;
  using avout::detail::encode_store_record;
  const avout::StoreIdentity identity{"postgresql", "ledger-2.eu_west"};
  CHECK(encode_store_record(identity) == avout::to_bytes("postgresql:ledger-2.eu_west"));
  CHECK(decode_store_record(encode_store_record(identity), "/r") == identity);
  CHECK(decode_store_record(avout::to_bytes("my+kind.v2:x"), "/r") ==
        avout::StoreIdentity{"my+kind.v2", "x"});
}

TEST_CASE("store record: anything but a valid scheme and name is CodecError") {
  using avout::detail::decode_store_record;
  for (const std::string& text : std::vector<std::string>{"", "redis", ":main", "redis:", "1redis:main", "redis:ma:in", "redis:a b",
        "redis:" + std::string(65, 'n'), std::string(33, 'r') + ":main", std::string("redis:\0", 7)}) {
    INFO(text);
    CHECK_THROWS_AS(decode_store_record(avout::to_bytes(text), "/r"), avout::CodecError);
  }
}

TEST_CASE("store names: letters, digits, '-', '_', '.', 1 to 64 of them") {
  CHECK_NOTHROW(avout::validate_store_name("main", "t"));
  CHECK_NOTHROW(avout::validate_store_name(std::string(64, 'a'), "t"));
  for (const std::string& name : std::vector<std::string>{"", "a b", "a/b", "a:b", "ü", std::string(65, 'a')}) {
    INFO(name);
    CHECK_THROWS_AS(avout::validate_store_name(name, "t"), avout::InvalidName);
  }
}
