#pragma once
// How the library's own code sends a message: through the user's logger when one was given,
// else through the default one. A logger that throws loses that message, nothing else.

#include <avout/logger.hpp>

#include <string>

namespace avout::detail {

/// Sends `message` to `logger` (the default logger when empty); never throws.
void log(const Logger& logger, LogLevel level, const std::string& message) noexcept;

/// Runs `body`, logging (as an error naming `what`) any exception it throws.
template <typename Body>
void run_logging_errors(const Logger& logger, const char* what, Body&& body) noexcept {
  try {
    body();
  } catch (const std::exception& error) {
    log(logger, LogLevel::error, std::string(what) + " threw: " + error.what());
  } catch (...) {
    log(logger, LogLevel::error, std::string(what) + " threw a non-standard exception");
  }
}

}  // namespace avout::detail
