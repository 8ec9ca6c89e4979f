#include "run_locked.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>

extern char** environ;

namespace avout::tool {

int run_locked(Client& client, const std::string& name, const std::vector<std::string>& command) {
  auto lock = client.lock(name);
  std::unique_lock held(lock);
  // The environment is built before spawning: the child gets it ready-made.
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "AVOUT_FENCING_TOKEN=", 20) != 0) environment.emplace_back(*entry);
  }
  environment.push_back("AVOUT_FENCING_TOKEN=" + std::to_string(lock.fencing_token()));
  auto pointers = [](std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& text : strings) out.push_back(text.data());
    out.push_back(nullptr);
    return out;
  };
  std::vector<std::string> arguments = command;
  auto argv = pointers(arguments);
  auto envp = pointers(environment);
  // Shared with the callback, which may run on the callback thread after this returns.
  auto child = std::make_shared<std::atomic<pid_t>>(0);
  lock.on_lost([child, name] {
    std::cerr << "avout: lock " << name << " was lost; stopping the command" << std::endl;
    if (const pid_t pid = child->load(); pid > 0) kill(pid, SIGTERM);
  });
  pid_t pid = 0;
  if (const int error = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data())) {
    std::cerr << "avout: cannot run " << command.front() << ": " << std::strerror(error) << "\n";
    return 127;
  }
  child->store(pid);
  const bool lost_before_start = !lock.is_held();
  if (lost_before_start) kill(pid, SIGTERM);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  child->store(0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace avout::tool
