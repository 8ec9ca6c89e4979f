#pragma once
// A command run while a hold lasts (`avout lock`, `avout elect`): started with the hold's
// variables in its environment, stopped when the hold is lost (SIGTERM, then SIGKILL once a
// grace passed), sent the stop signals avout gets, its exit status returned.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace avout::tool {

/// One command run under a hold.
class HeldCommand {
 public:
  /// `what` names the hold in messages ("lock /x"); `kill_after` is the grace between the
  /// SIGTERM of a stop and the SIGKILL that follows when the command is still running.
  HeldCommand(std::string what, std::chrono::milliseconds kill_after);

  /// A callback for the hold's loss (Lock::on_lost, LeaderElection::on_revoked): stops the
  /// command, or stops it as it starts when it has not started yet. Safe from any thread;
  /// it may outlive this object.
  std::function<void()> stopper() const;

  /// Runs `command` (searched in PATH) with `variables` ("NAME=value") replacing those names
  /// in the environment, stopped at once when `still_held` says false after the start;
  /// returns its exit status (128 + signal when killed, 127 when it could not start).
  /// SIGINT, SIGTERM and SIGHUP sent to this process while the command runs are passed on to
  /// it (this process waits for its exit, then the caller releases the hold). The signals go
  /// to the command's process only: a command that starts others passes them on (or `exec`s
  /// the last one).
  int run(const std::vector<std::string>& command, const std::vector<std::string>& variables,
          const std::function<bool()>& still_held);

 private:
  struct State;
  std::shared_ptr<State> state_;  ///< shared with stopper()'s callbacks
};

}  // namespace avout::tool
