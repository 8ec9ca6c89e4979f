#pragma once
// `avout lock NAME -- COMMAND` and `avout elect NAME -- COMMAND`: run a command while holding
// a distributed lock, or while leading an election (tools/held_command.hpp runs it).

#include <avout/avout.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace avout::tool {

/// Takes the lock `name`, runs `command` (searched in PATH) with the hold's fencing token in
/// AVOUT_FENCING_TOKEN, releases the lock when it ends and returns its exit status (128 +
/// signal when killed, 127 when it could not start). When the hold is lost meanwhile the
/// command gets SIGTERM, since it no longer runs under the lock, and SIGKILL when it still
/// runs `kill_after` later. SIGINT, SIGTERM and SIGHUP sent to avout meanwhile are passed on
/// to the command (the lock is released once it exits).
int run_locked(Client& client, const std::string& name, const std::vector<std::string>& command,
               std::chrono::milliseconds kill_after);

/// The candidate id `avout elect` campaigns with unless given one: "<host name>:<pid>".
std::string default_candidate_id();

/// Campaigns as `id` in the election `name` until leading (Timeout once `deadline` passed,
/// nothing run), then runs `command` as run_locked does, with the leadership's fencing token
/// in AVOUT_FENCING_TOKEN and `id` in AVOUT_LEADER_ID; resigns when it ends and returns its
/// exit status. A revoked leadership (a lapse, an expiry, a freeze past the session timeout)
/// stops the command: SIGTERM, then SIGKILL after `kill_after`.
int run_elected(Client& client, const std::string& name, const std::string& id,
                const Deadline& deadline, const std::vector<std::string>& command,
                std::chrono::milliseconds kill_after);

}  // namespace avout::tool
