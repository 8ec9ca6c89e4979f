// The split of stored bytes into format, bookkeeping and payload (<avout/stored_value.hpp>)
// as functions over plain data: what each value becomes, and join(split(b)) == b for values
// the core writes, for malformed and for random bytes.
#include "records/atom_envelope.hpp"
#include "records/stored_text.hpp"

#include <avout/codec.hpp>
#include <avout/errors.hpp>
#include <avout/json.hpp>
#include <avout/stored_value.hpp>

#include <doctest/doctest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using avout::Bytes;
using avout::StoredKind;
using avout::StoredValue;

Bytes text_bytes(const std::string& text) { return Bytes(text.begin(), text.end()); }

Bytes envelope(const Bytes& payload, std::uint64_t sequence = 7,
               std::vector<std::uint64_t> writers = {11, 12}) {
  return avout::detail::encode_envelope(
      avout::detail::AtomEnvelope{sequence, std::move(writers), payload});
}

// Splits `bytes`, checks that joining gives them back, and returns the split.
StoredValue split_exactly(StoredKind kind, const Bytes& bytes) {
  const StoredValue value = avout::split_stored_value(kind, bytes);
  CHECK(avout::join_stored_value(kind, value) == bytes);
  return value;
}

}  // namespace

TEST_CASE("a string value's payload is its text, a JSON value's its document") {
  auto text = split_exactly(StoredKind::point, avout::encode(std::string("hello")));
  CHECK(text.format == "text");
  CHECK(text.bookkeeping.empty());
  CHECK(text.payload == text_bytes("hello"));

  const nlohmann::json document = {{"id", "a1"}, {"quantity", 3}, {"tags", {"x", "é"}}};
  auto json = split_exactly(StoredKind::point, avout::encode(document));
  CHECK(json.format == "json");
  CHECK(json.payload == text_bytes(document.dump()));

  auto number = split_exactly(StoredKind::point, avout::encode(5L));
  CHECK(number.format == "avout");
  CHECK(number.payload == avout::encode(5L));
}

TEST_CASE("an atom's bookkeeping is its write sequence and writer ids") {
  auto atom = split_exactly(StoredKind::atom, envelope(avout::encode(std::string("hello"))));
  CHECK(atom.format == "text");
  CHECK(atom.bookkeeping == "7 11 12");
  CHECK(atom.payload == text_bytes("hello"));
  CHECK(split_exactly(StoredKind::atom, envelope(avout::encode(1.5), 1, {})).bookkeeping == "1");
  CHECK(split_exactly(StoredKind::atom, envelope(avout::encode(1.5), 1, {})).format == "avout");
  // An envelope around bytes of no value: the bookkeeping still splits off.
  auto odd = split_exactly(StoredKind::atom, envelope(Bytes{0xff, 0x00}));
  CHECK(odd.format == "opaque");
  CHECK(odd.bookkeeping == "7 11 12");
}

TEST_CASE("text a text column would refuse, and non-canonical forms, stay binary") {
  CHECK(split_exactly(StoredKind::point, avout::encode(std::string("a\0b", 3))).format == "avout");
  CHECK(split_exactly(StoredKind::point, avout::encode(std::string("\xc3\x28"))).format == "avout");
  CHECK(split_exactly(StoredKind::point, avout::encode(std::string("\xed\xa0\x80"))).format ==
        "avout");  // a surrogate
  // "hi" with its length written in two varint bytes: valid for the codec, yet not canonical.
  CHECK(split_exactly(StoredKind::point, Bytes{0x05, 0x82, 0x00, 'h', 'i'}).format == "avout");
  // A user codec's bytes that are no JSON.
  Bytes user;
  avout::codec::write_user(user, text_bytes("{not json"));
  CHECK(split_exactly(StoredKind::point, user).format == "avout");
  // Trailing bytes after a string: not one value.
  Bytes trailing = avout::encode(std::string("x"));
  trailing.push_back(0);
  CHECK(split_exactly(StoredKind::point, trailing).format == "opaque");
}

TEST_CASE("bytes of no known form are opaque, with no bookkeeping") {
  for (const Bytes& bytes : {Bytes{}, Bytes{0xff}, Bytes{0x01, 0x02}, text_bytes("hello")}) {
    for (auto kind : {StoredKind::atom, StoredKind::point}) {
      auto value = split_exactly(kind, bytes);
      CHECK(value.format == "opaque");
      CHECK(value.bookkeeping.empty());
      CHECK(value.payload == bytes);
    }
  }
}

TEST_CASE("a removed atom's tombstone splits as deleted, with nothing in it") {
  const Bytes tombstone = avout::join_stored_value(StoredKind::atom, {"deleted", "", {}});
  const auto value = split_exactly(StoredKind::atom, tombstone);
  CHECK(value.format == "deleted");
  CHECK(value.bookkeeping.empty());
  CHECK(value.payload.empty());
  // A point is never a tombstone: the same byte is only opaque there.
  CHECK(split_exactly(StoredKind::point, tombstone).format == "opaque");
  CHECK_THROWS_AS(avout::join_stored_value(StoredKind::point, {"deleted", "", {}}),
                  avout::CodecError);
  CHECK_THROWS_AS(avout::join_stored_value(StoredKind::atom, {"deleted", "", Bytes{1}}),
                  avout::CodecError);
}

TEST_CASE("join refuses parts no split makes") {
  auto refuses = [](StoredKind kind, StoredValue value) {
    CHECK_THROWS_AS(avout::join_stored_value(kind, value), avout::CodecError);
  };
  refuses(StoredKind::point, {"yaml", "", {}});
  refuses(StoredKind::point, {"text", "1", {}});
  refuses(StoredKind::atom, {"text", "", text_bytes("hello")});
  for (const char* bad :
       {"01", "1 ", " 1", "x", "1  2", "18446744073709551616", "1 2 3 4 5 6 7 8 9 10"}) {
    refuses(StoredKind::atom, {"text", bad, text_bytes("hello")});
  }
  CHECK(avout::join_stored_value(StoredKind::atom, {"text", "18446744073709551615 0", {}}) ==
        envelope(avout::encode(std::string()), ~std::uint64_t{0}, {0}));
}

TEST_CASE("the JSON check follows RFC 8259") {
  auto json = [](const std::string& text) {
    return avout::detail::is_json_document(
        std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
  };
  for (const char* good :
       {"0", "-0.5e+10", "\"a\\u00e9\\n\"", " [1, {\"a\": null}] ", "true", "{}", "[]", "1E5"}) {
    CHECK_MESSAGE(json(good), good);
  }
  for (const char* bad : {"", "01", "1.", ".5", "-", "[1,]", "{\"a\"}", "{a: 1}", "\"\\x\"",
                          "\"a\tb\"", "tru", "[1] 2", "\"\\u12\"", "+1"}) {
    CHECK_MESSAGE(!json(bad), bad);
  }
  CHECK(json(std::string(512, '[') + std::string(512, ']')));
  CHECK(!json(std::string(600, '[') + std::string(600, ']')));
}

TEST_CASE("join(split(b)) == b for random and mutated bytes") {
  std::mt19937_64 random(39);
  const std::vector<Bytes> seeds{
      envelope(avout::encode(std::string("hello"))), avout::encode(nlohmann::json{{"k", {1, 2}}}),
      avout::encode(std::map<std::string, long>{{"a", 1}}), avout::encode(std::string("text"))};
  for (int round = 0; round < 20000; ++round) {
    Bytes bytes = seeds[random() % seeds.size()];
    for (int flips = static_cast<int>(random() % 3); flips >= 0; --flips) {
      if (!bytes.empty()) bytes[random() % bytes.size()] = static_cast<std::uint8_t>(random());
    }
    if (random() % 4 == 0) bytes.resize(random() % (bytes.size() + 1));
    for (auto kind : {StoredKind::atom, StoredKind::point}) {
      const StoredValue value = avout::split_stored_value(kind, bytes);
      REQUIRE(avout::join_stored_value(kind, value) == bytes);
    }
  }
}
