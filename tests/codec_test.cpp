// avout::Codec: round trips of every built-in type, CodecError on malformed bytes, and random
// bytes that never crash a decoder.
#include <avout/codec.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>

namespace {

template <typename T>
T round_trip(const T& value) {
  return avout::decode<T>(avout::encode(value));
}

// Decoding must either succeed or throw CodecError: nothing else, never a crash.
struct Outcomes {
  long decoded = 0;
  long rejected = 0;
};

template <typename Decode>
void decodes_or_rejects(Outcomes& outcomes, Decode decode) {
  try {
    decode();
    ++outcomes.decoded;
  } catch (const avout::CodecError&) {
    ++outcomes.rejected;
  }
}

}  // namespace

TEST_CASE("integers round-trip at their extremes") {
  CHECK(round_trip(std::numeric_limits<std::int64_t>::min()) == std::numeric_limits<std::int64_t>::min());
  CHECK(round_trip(std::numeric_limits<std::int64_t>::max()) == std::numeric_limits<std::int64_t>::max());
  CHECK(round_trip(std::numeric_limits<std::uint64_t>::max()) == std::numeric_limits<std::uint64_t>::max());
  CHECK(round_trip<std::int8_t>(-128) == -128);
  CHECK(round_trip<std::uint16_t>(65535) == 65535);
  CHECK(round_trip(0L) == 0L);
}

TEST_CASE("an integer decodes into a wider or other-signed type only when it fits") {
  CHECK(avout::decode<long>(avout::encode<int>(-5)) == -5);
  CHECK(avout::decode<unsigned>(avout::encode<long>(7)) == 7u);
  CHECK_THROWS_AS(avout::decode<std::uint16_t>(avout::encode<long>(70000)), avout::CodecError);
  CHECK_THROWS_AS(avout::decode<unsigned>(avout::encode<long>(-1)), avout::CodecError);
  CHECK_THROWS_AS(avout::decode<long>(avout::encode(std::numeric_limits<std::uint64_t>::max())),
                  avout::CodecError);
}

TEST_CASE("floating point values round-trip, special values included") {
  CHECK(round_trip(3.25) == 3.25);
  CHECK(round_trip(1.5f) == 1.5f);
  CHECK(std::signbit(round_trip(-0.0)));
  CHECK(std::isnan(round_trip(std::numeric_limits<double>::quiet_NaN())));
  CHECK(round_trip(std::numeric_limits<double>::infinity()) == std::numeric_limits<double>::infinity());
  CHECK_THROWS_AS(avout::decode<float>(avout::encode(1e300)), avout::CodecError);
}

TEST_CASE("bools, strings and bytes round-trip") {
  CHECK(round_trip(true));
  CHECK_FALSE(round_trip(false));
  CHECK(round_trip(std::string()).empty());
  const std::string with_nul("a\0b", 3);
  CHECK(round_trip(with_nul) == with_nul);
  const avout::Bytes raw{0, 255, 7};
  CHECK(round_trip(raw) == raw);
}

TEST_CASE("containers round-trip, nested and empty") {
  CHECK(round_trip(std::vector<int>{}).empty());
  CHECK(round_trip(std::vector<int>{1, 2, 3}) == std::vector<int>{1, 2, 3});
  const std::map<std::string, std::vector<long>> nested{{"a", {1}}, {"b", {}}, {"", {-1, 2}}};
  CHECK(round_trip(nested) == nested);
  CHECK_FALSE(round_trip(std::optional<long>{}).has_value());
  CHECK(round_trip(std::optional<std::string>{"x"}) == std::optional<std::string>{"x"});
  const std::vector<std::optional<std::map<std::string, double>>> deep{std::nullopt, std::map<std::string, double>{{"k", 1.5}}};
  CHECK(round_trip(deep) == deep);
}

TEST_CASE("truncated encodings are CodecError at every length") {
  const auto full = avout::encode(std::map<std::string, std::vector<long>>{{"key", {1, 2, 3}}});
  for (std::size_t length = 0; length < full.size(); ++length) {
    CAPTURE(length);
    const avout::Bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(length));
    CHECK_THROWS_AS((avout::decode<std::map<std::string, std::vector<long>>>(cut)), avout::CodecError);
  }
}

TEST_CASE("wrong tags, bad bool bytes, trailing bytes and duplicate keys are CodecError") {
  CHECK_THROWS_AS(avout::decode<std::string>(avout::encode(5L)), avout::CodecError);
  CHECK_THROWS_AS(avout::decode<long>(avout::encode(std::string("5"))), avout::CodecError);
  auto boolean = avout::encode(true);
  boolean[1] = 2;
  CHECK_THROWS_AS(avout::decode<bool>(boolean), avout::CodecError);
  auto trailing = avout::encode(1L);
  trailing.push_back(0);
  CHECK_THROWS_AS(avout::decode<long>(trailing), avout::CodecError);
  // A map of count 2 whose two keys are both "a".
  avout::Bytes duplicate{0x08, 0x02};
  for (int i = 0; i < 2; ++i) {
    auto key = avout::encode(std::string("a"));
    auto value = avout::encode(1L);
    duplicate.insert(duplicate.end(), key.begin(), key.end());
    duplicate.insert(duplicate.end(), value.begin(), value.end());
  }
  CHECK_THROWS_AS((avout::decode<std::map<std::string, long>>(duplicate)), avout::CodecError);
}

TEST_CASE("nesting deeper than the limit is CodecError, not a stack overflow") {
  avout::Bytes deep;
  for (int i = 0; i < 100000; ++i) {
    deep.push_back(0x09);  // optional, present
    deep.push_back(1);
  }
  CHECK_THROWS_AS(avout::codec::describe(deep), avout::CodecError);
}

TEST_CASE("a huge declared length is rejected before anything is allocated") {
  avout::Bytes lying{0x07};  // a list claiming 2^63 elements in a 12-byte input
  for (int i = 0; i < 9; ++i) lying.push_back(0xff);
  lying.push_back(0x7f);
  CHECK_THROWS_AS(avout::decode<std::vector<long>>(lying), avout::CodecError);
}

TEST_CASE("describe renders every built-in value for people") {
  CHECK(avout::codec::describe(avout::encode(42L)) == "42");
  CHECK(avout::codec::describe(avout::encode(std::string("hi"))) == "\"hi\"");
  CHECK(avout::codec::describe(avout::encode(std::vector<int>{1, 2})) == "[1, 2]");
  CHECK(avout::codec::describe(avout::encode(std::map<std::string, bool>{{"a", true}})) ==
        "{\"a\": true}");
  CHECK(avout::codec::describe(avout::encode(std::optional<long>{})) == "nil");
  CHECK(avout::codec::describe(avout::encode(avout::Bytes{0x0a, 0x0b})) == "0x0a0b");
}

TEST_CASE("random and mutated bytes either decode or give CodecError, never a crash") {
  std::mt19937 random(20261122);
  const std::vector<avout::Bytes> seeds{
      avout::encode(std::vector<std::map<std::string, long>>{{{"a", 1}}, {{"bb", -2}}}),
      avout::encode(std::optional<double>{2.5}), avout::encode(std::string("text")),
      avout::encode(123456789L)};
  constexpr int rounds = 200000;
  Outcomes outcomes;
  for (int round = 0; round < rounds; ++round) {
    avout::Bytes bytes;
    if (round % 2 == 0) {
      bytes.resize(random() % 65);
      for (auto& b : bytes) b = static_cast<std::uint8_t>(random());
    } else {
      bytes = seeds[random() % seeds.size()];
      const int edits = 1 + static_cast<int>(random() % 3);
      for (int e = 0; e < edits && !bytes.empty(); ++e) {
        const auto at = random() % bytes.size();
        if (random() % 3 == 0) bytes.resize(at);
        else bytes[at] = static_cast<std::uint8_t>(random());
      }
    }
    decodes_or_rejects(outcomes, [&] { (void)avout::decode<long>(bytes); });
    decodes_or_rejects(outcomes, [&] { (void)avout::decode<std::string>(bytes); });
    decodes_or_rejects(outcomes, [&] {
      (void)avout::decode<std::vector<std::map<std::string, long>>>(bytes);
    });
    decodes_or_rejects(outcomes, [&] { (void)avout::decode<std::optional<double>>(bytes); });
    decodes_or_rejects(outcomes, [&] { (void)avout::codec::describe(bytes); });
  }
  CHECK(outcomes.decoded + outcomes.rejected == 5L * rounds);
  CHECK(outcomes.decoded > 0);   // mutations of valid encodings sometimes stay valid
  CHECK(outcomes.rejected > 0);
}
