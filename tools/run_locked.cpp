#include "run_locked.hpp"
#include "held_command.hpp"

#include <unistd.h>
#include <iostream>

namespace avout::tool {

int run_locked(Client& client, const std::string& name, const std::vector<std::string>& command,
               std::chrono::milliseconds kill_after) {
  auto lock = client.lock(name);
  std::unique_lock held(lock);
  HeldCommand running("lock " + name, kill_after);
  lock.on_lost(running.stopper());
  return running.run(command, {"AVOUT_FENCING_TOKEN=" + std::to_string(lock.fencing_token())},
                     [&] { return lock.is_held(); });
}

std::string default_candidate_id() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host[0] != '\0' ? host : "localhost") + ":" + std::to_string(getpid());
}

int run_elected(Client& client, const std::string& name, const std::string& id,
                const Deadline& deadline, const std::vector<std::string>& command,
                std::chrono::milliseconds kill_after) {
  auto election = client.leader_election(name, id);
  HeldCommand running("leadership of election " + name, kill_after);
  election.on_revoked(running.stopper());
  election.campaign(deadline);  // Timeout once the deadline passed: nothing run, exit 1
  const auto token = election.fencing_token();
  std::cerr << "avout: leading election " << name << " as " << id << " (token " << token << ")"
            << std::endl;
  const int status = running.run(
      command, {"AVOUT_FENCING_TOKEN=" + std::to_string(token), "AVOUT_LEADER_ID=" + id},
      [&] { return election.is_leader(); });
  election.resign();  // the next candidate leads once the node is gone
  return status;
}

}  // namespace avout::tool
