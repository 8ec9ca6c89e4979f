#include "held_command.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <iterator>
#include <mutex>
#include <optional>
#include <thread>

extern char** environ;

namespace {

// The running command, for the handler below (lock-free atomics: async-signal-safe).
std::atomic<pid_t> signal_target{0};
// A stop signal that came while the command was being started, passed on once it runs.
std::atomic<int> pending_signal{0};

// Passes a stop signal sent to avout on to the command, so avout outlives it and releases
// its hold when it exits, instead of dying and leaving the command running without one.
extern "C" void pass_on(int signal) {
  // Recorded first: either this handler sees the command's pid, or run() sees the record after
  // storing the pid; whoever takes the record sends it, exactly once.
  pending_signal.store(signal);
  if (const pid_t pid = signal_target.load(); pid > 0) {
    if (const int taken = pending_signal.exchange(0); taken != 0) kill(pid, taken);
  }
}

constexpr int passed_on[] = {SIGINT, SIGTERM, SIGHUP};

}  // namespace

namespace avout::tool {

struct HeldCommand::State {
  std::string what;
  std::chrono::milliseconds kill_after;
  std::mutex mutex;  // guards what follows
  pid_t pid = 0;     // the running command; 0 before its start and after its exit
  std::optional<std::chrono::steady_clock::time_point> stopped;  // when SIGTERM was asked for

  // SIGTERM to the command (now, or as soon as it runs), once.
  void stop() {
    std::lock_guard lock(mutex);
    if (stopped) return;
    stopped = std::chrono::steady_clock::now();
    std::cerr << "avout: " << what << " was lost; stopping the command" << std::endl;
    if (pid > 0) kill(pid, SIGTERM);
  }
};

HeldCommand::HeldCommand(std::string what, std::chrono::milliseconds kill_after)
    : state_(std::make_shared<State>()) {
  state_->what = std::move(what);
  state_->kill_after = kill_after;
}

std::function<void()> HeldCommand::stopper() const {
  return [state = state_] { state->stop(); };
}

int HeldCommand::run(const std::vector<std::string>& command,
                     const std::vector<std::string>& variables,
                     const std::function<bool()>& still_held) {
  // The environment is built before spawning: the child gets it ready-made.
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    bool replaced = false;
    for (const auto& variable : variables) {
      const auto name_end = variable.find('=') + 1;
      replaced = replaced || std::strncmp(*entry, variable.c_str(), name_end) == 0;
    }
    if (!replaced) environment.emplace_back(*entry);
  }
  environment.insert(environment.end(), variables.begin(), variables.end());
  auto pointers = [](std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& text : strings) out.push_back(text.data());
    out.push_back(nullptr);
    return out;
  };
  std::vector<std::string> arguments = command;
  auto argv = pointers(arguments);
  auto envp = pointers(environment);
  // The handlers are in place before the command starts: a signal sent once it runs (it may
  // say so at once) must reach it, not end avout with the hold still taken.
  struct sigaction handler {};
  handler.sa_handler = pass_on;
  sigemptyset(&handler.sa_mask);
  handler.sa_flags = SA_RESTART;
  struct sigaction before[std::size(passed_on)];
  pending_signal.store(0);
  for (std::size_t i = 0; i < std::size(passed_on); ++i)
    sigaction(passed_on[i], &handler, &before[i]);
  const auto restore_handlers = [&] {
    for (std::size_t i = 0; i < std::size(passed_on); ++i)
      sigaction(passed_on[i], &before[i], nullptr);
    signal_target.store(0);
  };
  pid_t pid = 0;
  if (const int error = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data())) {
    restore_handlers();
    std::cerr << "avout: cannot run " << command.front() << ": " << std::strerror(error) << "\n";
    return 127;
  }
  {
    std::lock_guard lock(state_->mutex);
    state_->pid = pid;
    if (state_->stopped) kill(pid, SIGTERM);  // lost while it started
  }
  signal_target.store(pid);
  if (const int early = pending_signal.exchange(0); early != 0) kill(pid, early);
  if (!still_held()) state_->stop();
  // waitpid has no timeout: the exit is polled, so a SIGKILL can follow the grace of a stop.
  int status = 0;
  bool killed = false;
  for (;;) {
    const pid_t ended = waitpid(pid, &status, WNOHANG);
    if (ended == pid || (ended < 0 && errno != EINTR)) break;
    {
      std::lock_guard lock(state_->mutex);
      if (!killed && state_->stopped &&
          std::chrono::steady_clock::now() - *state_->stopped >= state_->kill_after) {
        std::cerr << "avout: the command outlived SIGTERM by " << state_->kill_after.count()
                  << " ms; killing it" << std::endl;
        kill(pid, SIGKILL);
        killed = true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  restore_handlers();
  {
    std::lock_guard lock(state_->mutex);
    state_->pid = 0;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace avout::tool
