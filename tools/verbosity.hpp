#pragma once
// How much of the library's log the tool prints: nothing by default (a command's own message
// says what failed), more with each -v.

#include <avout/logger.hpp>

namespace avout::tool {

/// The logger for `verbosity` -v flags: 0 prints nothing (neither avout's messages nor the
/// ZooKeeper C client's), 1 warnings and errors (rate-limited, as default_logger()), 2 adds
/// info, 3 or more adds debug; lines go to stderr prefixed "avout: LEVEL:".
Logger logger_for(int verbosity);

}  // namespace avout::tool
