// avout::Codec: round trips of every built-in type, CodecError on malformed bytes, and random
// bytes that never crash a decoder.
#include <avout/codec.hpp>

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

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

enum class Colour : std::uint8_t { red = 1, green = 200 };
enum Plain { first = -3, second = 9 };

std::string message_of(const auto& decode_it) {
  try {
    decode_it();
  } catch (const avout::CodecError& error) {
    return error.what();
  }
  return "no CodecError";
}

}  // namespace

TEST_CASE("integers round-trip at their extremes") {
  CHECK(round_trip(std::numeric_limits<std::int64_t>::min()) ==
        std::numeric_limits<std::int64_t>::min());
  CHECK(round_trip(std::numeric_limits<std::int64_t>::max()) ==
        std::numeric_limits<std::int64_t>::max());
  CHECK(round_trip(std::numeric_limits<std::uint64_t>::max()) ==
        std::numeric_limits<std::uint64_t>::max());
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
  CHECK(round_trip(std::numeric_limits<double>::infinity()) ==
        std::numeric_limits<double>::infinity());
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
  const std::vector<std::optional<std::map<std::string, double>>> deep{
      std::nullopt, std::map<std::string, double>{{"k", 1.5}}};
  CHECK(round_trip(deep) == deep);
}

TEST_CASE("pairs, tuples, arrays, enums and unordered containers round-trip") {
  const std::pair<std::string, long> pair{"a", -1};
  CHECK(round_trip(pair) == pair);
  const std::tuple<int, std::string, std::optional<double>, bool> tuple{7, "x", 2.5, true};
  CHECK(round_trip(tuple) == tuple);
  CHECK(round_trip(std::tuple<>{}) == std::tuple<>{});
  const std::array<long, 3> array{1, 2, 3};
  CHECK(round_trip(array) == array);
  CHECK(round_trip(Colour::green) == Colour::green);
  CHECK(round_trip(second) == second);
  const std::unordered_map<std::string, std::vector<int>> map{{"a", {1}}, {"b", {}}, {"c", {2, 3}}};
  CHECK(round_trip(map) == map);
  const std::unordered_set<long> set{5, -4, 3, 1000};
  CHECK(round_trip(set) == set);
  CHECK(avout::codec::describe(avout::encode(pair)) == "[\"a\", -1]");
}

TEST_CASE("equal unordered containers encode to equal bytes, so compare_and_set can match them") {
  std::unordered_set<long> one;
  std::unordered_set<long> other(64);
  for (long i = 0; i < 50; ++i) one.insert(i);
  for (long i = 49; i >= 0; --i) other.insert(i);
  CHECK(avout::encode(one) == avout::encode(other));
}

TEST_CASE("decoding a tuple, array or enum of the wrong shape is CodecError") {
  CHECK_THROWS_AS((avout::decode<std::array<long, 2>>(avout::encode(std::array<long, 3>{1, 2, 3}))),
                  avout::CodecError);
  CHECK_THROWS_AS((avout::decode<std::pair<long, long>>(avout::encode(std::vector<long>{1}))),
                  avout::CodecError);
  CHECK_THROWS_AS(avout::decode<Colour>(avout::encode(300)), avout::CodecError);
  avout::Bytes duplicate{0x07, 0x02};
  for (int i = 0; i < 2; ++i) {
    auto element = avout::encode(1L);
    duplicate.insert(duplicate.end(), element.begin(), element.end());
  }
  CHECK_THROWS_AS(avout::decode<std::unordered_set<long>>(duplicate), avout::CodecError);
}

TEST_CASE("a value of another kind is CodecError saying what was expected and what was found") {
  const std::string text =
      message_of([] { (void)avout::decode<long>(avout::encode(std::string("hi"))); });
  CHECK(text.find("expected an integer, found a string") != std::string::npos);
  const std::string listed =
      message_of([] { (void)avout::decode<std::string>(avout::encode(std::vector<long>{1})); });
  CHECK(listed.find("expected a string, found a list") != std::string::npos);
  const std::string named = message_of(
      [] { (void)avout::codec::decode_named<double>(avout::encode(true), "atom", "/flag"); });
  CHECK(named.find("atom /flag") != std::string::npos);
  CHECK(named.find("expected a floating-point number, found a bool") != std::string::npos);
}

TEST_CASE("kind_of names the kind of any stored value from its tag") {
  CHECK(avout::codec::kind_of(avout::encode(1L)) == "an integer");
  CHECK(avout::codec::kind_of(avout::encode(std::string())) == "a string");
  CHECK(avout::codec::kind_of(avout::encode(std::map<long, long>{})) == "a map");
  CHECK(avout::codec::kind_of(avout::Bytes{}) == "nothing");
}

TEST_CASE("truncated encodings are CodecError at every length") {
  const auto full = avout::encode(std::map<std::string, std::vector<long>>{{"key", {1, 2, 3}}});
  for (std::size_t length = 0; length < full.size(); ++length) {
    CAPTURE(length);
    const avout::Bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(length));
    CHECK_THROWS_AS((avout::decode<std::map<std::string, std::vector<long>>>(cut)),
                    avout::CodecError);
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
        if (random() % 3 == 0)
          bytes.resize(at);
        else
          bytes[at] = static_cast<std::uint8_t>(random());
      }
    }
    decodes_or_rejects(outcomes, [&] { (void)avout::decode<long>(bytes); });
    decodes_or_rejects(outcomes, [&] { (void)avout::decode<std::string>(bytes); });
    decodes_or_rejects(
        outcomes, [&] { (void)avout::decode<std::vector<std::map<std::string, long>>>(bytes); });
    decodes_or_rejects(outcomes, [&] { (void)avout::decode<std::optional<double>>(bytes); });
    decodes_or_rejects(outcomes, [&] { (void)avout::codec::describe(bytes); });
  }
  CHECK(outcomes.decoded + outcomes.rejected == 5L * rounds);
  CHECK(outcomes.decoded > 0);  // mutations of valid encodings sometimes stay valid
  CHECK(outcomes.rejected > 0);
}
