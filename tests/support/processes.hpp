#pragma once
// Runs test code in several real processes. Fork before the parent opens any client: the
// child then has no ZooKeeper, Redis or PostgreSQL handle it did not open itself.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace avout::testing {

/// A child process running a function.
class ChildProcess {
 public:
  /// Forks; the child runs `body(index)` and exits 0, or 1 with the error on stderr when
  /// it throws. The child never returns into the test runner.
  ChildProcess(int index, const std::function<void(int)>& body);
  /// Kills (SIGKILL) and reaps the child if it still runs.
  ~ChildProcess();
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  /// The child's pid.
  int pid() const { return pid_; }
  /// Sends a signal (SIGKILL, SIGSTOP, SIGCONT...).
  void signal(int signal_number);
  /// Waits up to `timeout` for the child to end; returns its exit code (128+signal when
  /// killed). Throws std::runtime_error (after SIGKILL) on timeout.
  int wait(std::chrono::milliseconds timeout);

 private:
  int pid_ = -1;
};

/// A one-shot go signal from the parent to children forked earlier: lets a test fork its
/// children first and open its own clients afterwards (forking a process that has live
/// client threads is unsafe).
class StartSignal {
 public:
  /// Opens the pipe; create it before forking.
  StartSignal();
  /// Closes both ends.
  ~StartSignal();
  StartSignal(const StartSignal&) = delete;
  StartSignal& operator=(const StartSignal&) = delete;
  /// In a child: blocks until the parent calls release() (or exits).
  void wait();
  /// In the parent: lets every waiting child go.
  void release();

 private:
  int read_end_ = -1;
  int write_end_ = -1;
};

/// Runs `body(i)` in `count` child processes at once and waits for all; returns the exit
/// codes (all 0 when every child succeeded). Throws on timeout after killing the children.
std::vector<int> run_in_processes(int count, const std::function<void(int)>& body,
                                  std::chrono::milliseconds timeout);

/// Now on the steady clock, in microseconds: the clock every process of the host shares
/// (CLOCK_MONOTONIC), so moments logged by several processes compare.
inline std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Waits until `file` exists (a child's sign that it reached a point); false when `limit`
/// passed first.
bool wait_for_file(const std::filesystem::path& file, std::chrono::milliseconds limit);

}  // namespace avout::testing
