#pragma once
// Where avout's own messages go: every library message (a callback that threw, an agent
// action held up by an outage, the ZooKeeper C client's connection chatter) passes through
// one Logger, given in ClientOptions::logger or SessionOptions::logger.

#include <avout/export.hpp>

#include <functional>
#include <string_view>

namespace avout {

/// How much a message matters.
enum class LogLevel {
  debug,    ///< detail for a developer (the ZooKeeper client's debug output)
  info,     ///< normal operation worth knowing (a connection made)
  warning,  ///< something went wrong and avout works around it (a retried connection)
  error,    ///< something went wrong that avout could not handle (a callback threw)
};

/// Receives one message (one line, no trailing newline). Called from avout's internal
/// threads, possibly several at once: it must be thread safe and must not call avout.
using Logger = std::function<void(LogLevel level, std::string_view message)>;

/// "debug", "info", "warning" or "error".
AVOUT_API std::string_view to_string(LogLevel level);

/// The logger used when none is given: warnings and errors to stderr, one line each prefixed
/// "avout:"; at most 3 lines per 10 s of each kind of message, then one line saying how many
/// similar messages were suppressed (bounded memory; thread safe). All default loggers share
/// one budget.
AVOUT_API Logger default_logger();

}  // namespace avout
