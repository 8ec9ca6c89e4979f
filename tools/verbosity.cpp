#include "verbosity.hpp"

#include <cstdio>
#include <string>

namespace avout::tool {

Logger logger_for(int verbosity) {
  if (verbosity <= 0) return [](LogLevel, std::string_view) {};
  if (verbosity == 1) return default_logger();
  const LogLevel least = verbosity == 2 ? LogLevel::info : LogLevel::debug;
  return [least](LogLevel level, std::string_view message) {
    if (level < least) return;
    const std::string line =
        "avout: " + std::string(to_string(level)) + ": " + std::string(message) + "\n";
    std::fputs(line.c_str(), stderr);  // one call per line: lines of threads do not interleave
  };
}

}  // namespace avout::tool
