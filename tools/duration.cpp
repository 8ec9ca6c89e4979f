#include "duration.hpp"

#include <charconv>
#include <stdexcept>
#include <utility>

namespace avout::tool {

namespace {

using std::chrono::milliseconds;

// Suffixes a value may end with, longest first so "ms" is not read as "m" then "s".
const std::pair<const char*, milliseconds> units[] = {{"ms", milliseconds(1)},
                                                      {"s", std::chrono::seconds(1)},
                                                      {"m", std::chrono::minutes(1)},
                                                      {"h", std::chrono::hours(1)}};

// "seconds" for a bare number counted in seconds, and so on.
std::string unit_name(milliseconds unit) {
  if (unit == std::chrono::hours(1)) return "hours";
  if (unit == std::chrono::minutes(1)) return "minutes";
  if (unit == std::chrono::seconds(1)) return "seconds";
  return "milliseconds";
}

}  // namespace

std::string format_duration(milliseconds duration) {
  if (duration.count() == 0) return "0";
  for (auto unit = std::rbegin(units); unit != std::rend(units); ++unit) {
    if (duration.count() % unit->second.count() == 0)
      return std::to_string(duration.count() / unit->second.count()) + unit->first;
  }
  return std::to_string(duration.count()) + "ms";
}

milliseconds parse_duration(const std::string& text, const DurationLimits& limits) {
  const std::string expected = "a whole number with ms, s, m or h (a bare number counts " +
                               unit_name(limits.bare_unit) + ")";
  unsigned long long number = 0;
  const char* end = text.data() + text.size();
  const auto [stopped, error] = std::from_chars(text.data(), end, number);
  if (error == std::errc::invalid_argument)
    throw std::invalid_argument("'" + text + "' is not a duration: expected " + expected);
  milliseconds unit = limits.bare_unit;
  if (stopped != end) {
    const std::string suffix(stopped, end);
    bool known = false;
    for (const auto& [name, size] : units) {
      if (suffix == name) {
        unit = size;
        known = true;
      }
    }
    if (!known)
      throw std::invalid_argument("'" + text + "' is not a duration: expected " + expected);
  }
  const std::string range =
      " (" + format_duration(limits.least) + " to " + format_duration(limits.most) + ")";
  // Compared before multiplying, so a huge number cannot overflow into the range.
  if (error == std::errc::result_out_of_range ||
      number > static_cast<unsigned long long>(limits.most.count() / unit.count()))
    throw std::invalid_argument("'" + text + "' is out of range" + range);
  const milliseconds value(static_cast<milliseconds::rep>(number) * unit.count());
  if (value < limits.least) throw std::invalid_argument("'" + text + "' is out of range" + range);
  return value;
}

CLI::Option* add_duration_option(CLI::App& app, const std::string& name, milliseconds& target,
                                 const DurationLimits& limits, const std::string& description) {
  auto* option = app.add_option_function<std::string>(
      name,
      [&target, limits, name](const std::string& text) {
        try {
          target = parse_duration(text, limits);
        } catch (const std::invalid_argument& error) {
          throw CLI::ValidationError(name, error.what());
        }
      },
      description);
  option->type_name("DURATION")->default_str(format_duration(target));
  return option;
}

}  // namespace avout::tool
