#pragma once
// `avout lock NAME -- COMMAND`: runs a command while holding a distributed lock.

#include <avout/avout.hpp>

#include <string>
#include <vector>

namespace avout::tool {

/// Takes the lock `name`, runs `command` (searched in PATH) with the hold's fencing token in
/// AVOUT_FENCING_TOKEN, releases the lock when it ends and returns its exit status (128 +
/// signal when killed, 127 when it could not start). When the hold is lost meanwhile the
/// command gets SIGTERM, since it no longer runs under the lock.
int run_locked(Client& client, const std::string& name, const std::vector<std::string>& command);

}  // namespace avout::tool
