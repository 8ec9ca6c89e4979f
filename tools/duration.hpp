#pragma once
// Durations on the command line (`--command-timeout 5s`, `--kill-after 500ms`): one parser for
// every duration option, so each takes the same units and refuses a bad value the same way.

#include <CLI/CLI.hpp>

#include <chrono>
#include <string>

namespace avout::tool {

/// What a duration option accepts: the unit of a bare number (kept from before units were
/// accepted) and the range a value must lie in.
struct DurationLimits {
  std::chrono::milliseconds bare_unit = std::chrono::seconds(1);  ///< unit of "5"
  std::chrono::milliseconds least{0};                             ///< smallest accepted
  std::chrono::milliseconds most = std::chrono::hours(24);        ///< largest accepted
};

/// `text` as a duration: a non-negative whole number followed by ms, s, m or h, or a bare
/// number in `limits.bare_unit`. An std::invalid_argument saying why (one short line, the
/// value quoted, the range in units) when it does not parse or lies outside the range.
std::chrono::milliseconds parse_duration(const std::string& text, const DurationLimits& limits);

/// `duration` as the parser reads it, in the largest unit that divides it ("10s", "500ms").
std::string format_duration(std::chrono::milliseconds duration);

/// Adds the duration option `name` to `app`, stored in `target` (whose value is the default
/// help shows); a value parse_duration refuses is a usage error naming the option.
CLI::Option* add_duration_option(CLI::App& app, const std::string& name,
                                 std::chrono::milliseconds& target, const DurationLimits& limits,
                                 const std::string& description);

}  // namespace avout::tool
