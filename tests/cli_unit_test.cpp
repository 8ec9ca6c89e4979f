// The command line's pure logic, over plain data: durations as options take them
// (tools/duration.hpp) and stored values as typed JSON (tools/json_value.hpp).
#include "duration.hpp"
#include "json_value.hpp"

#include <avout/json.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

using namespace std::chrono_literals;
using avout::tool::DurationLimits;
using avout::tool::parse_duration;

TEST_CASE("parse_duration takes ms, s, m and h, and a bare number in the option's unit") {
  const DurationLimits seconds{};
  CHECK(parse_duration("5s", seconds) == 5s);
  CHECK(parse_duration("250ms", seconds) == 250ms);
  CHECK(parse_duration("2m", seconds) == 2min);
  CHECK(parse_duration("1h", seconds) == 1h);
  CHECK(parse_duration("7", seconds) == 7s);
  CHECK(parse_duration("0", seconds) == 0ms);
  CHECK(parse_duration("7", DurationLimits{.bare_unit = 1ms}) == 7ms);
  CHECK(parse_duration("24h", seconds) == 24h);
}

TEST_CASE("parse_duration refuses what does not parse or lies outside the range, in one line") {
  const DurationLimits limits{.least = 1s, .most = 10min};
  for (const std::string text : {"", "s", "5x", "5 s", "1.5s", "-1s", "+3s", "5sm", "5S"}) {
    INFO(text);
    CHECK_THROWS_WITH_AS(parse_duration(text, limits), doctest::Contains("is not a duration"),
                         std::invalid_argument);
  }
  for (const std::string text :
       {"11m", "601", "999ms", "0", "1h", "99999999999999999999999", "18446744073709551615h"}) {
    INFO(text);
    const std::string expected = "'" + text + "' is out of range (1s to 10m)";
    CHECK_THROWS_WITH_AS(parse_duration(text, limits), expected.c_str(), std::invalid_argument);
  }
  CHECK(parse_duration("10m", limits) == 10min);
  CHECK(parse_duration("1000ms", limits) == 1s);
}

TEST_CASE("format_duration writes the largest unit that divides the duration") {
  CHECK(avout::tool::format_duration(0ms) == "0");
  CHECK(avout::tool::format_duration(1500ms) == "1500ms");
  CHECK(avout::tool::format_duration(10s) == "10s");
  CHECK(avout::tool::format_duration(120s) == "2m");
  CHECK(avout::tool::format_duration(24h) == "24h");
}

TEST_CASE("json_value types each codec value and names its type briefly") {
  using avout::tool::json_value;
  using Json = nlohmann::ordered_json;
  CHECK(json_value(avout::encode(-5L)).type == "long");
  CHECK(json_value(avout::encode(-5L)).value == -5);
  CHECK(json_value(avout::encode(std::uint64_t{7})).type == "unsigned");
  CHECK(json_value(avout::encode(0.25)).value == 0.25);
  CHECK(json_value(avout::encode(std::numeric_limits<double>::infinity())).value == "inf");
  CHECK(json_value(avout::encode(std::nan(""))).value == "nan");
  CHECK(json_value(avout::encode(false)).value == false);
  CHECK(json_value(avout::encode(std::string("a\"b"))).value == "a\"b");
  const auto bytes = json_value(avout::encode(avout::Bytes{'a', 'b', 'c', 'd'}));
  CHECK(bytes.type == "bytes");
  CHECK(bytes.value == "YWJjZA==");
  CHECK(bytes.has_bytes);
  const auto nested = json_value(avout::encode(std::vector<avout::Bytes>{{'x'}}));
  CHECK(nested.type == "list");
  CHECK(nested.value == Json::array({"eA=="}));
  CHECK(nested.has_bytes);
  CHECK(json_value(avout::encode(nlohmann::json{{"k", 1}})).type == "json");
  CHECK(json_value(avout::encode(nlohmann::json{{"k", 1}})).value == Json{{"k", 1}});
  CHECK(json_value(avout::encode(std::map<std::string, int>{{"b", 2}, {"a", 1}})).value.dump() ==
        R"({"a":1,"b":2})");
  CHECK(json_value(avout::encode(std::map<int, int>{{3, 4}})).value == Json::parse("[[3,4]]"));
  CHECK(json_value(avout::encode(std::optional<int>{})).value.is_null());
  avout::Bytes user;
  avout::codec::write_user(user, avout::Bytes{0x01, 0x02});
  CHECK(json_value(user).type == "user");
  CHECK(json_value(user).value == "AQI=");
  CHECK_THROWS_AS(json_value(avout::Bytes{0x01, 0x02}), avout::CodecError);
  CHECK_FALSE(avout::tool::value_fields(avout::Bytes{0x01}).contains("encoding"));
  CHECK(avout::tool::value_fields(avout::Bytes{0x01})["value_error"].get<std::string>().starts_with(
      "undecodable: "));
}

TEST_CASE("plain_text prints a string as it is and anything else as JSON") {
  CHECK(avout::tool::plain_text("two words") == "two words");
  CHECK(avout::tool::plain_text(nlohmann::ordered_json::array({1, "x"})) == R"([1,"x"])");
  CHECK(avout::tool::dump_line(std::string("\xff")) == "\"\xef\xbf\xbd\"");  // replaced
}
