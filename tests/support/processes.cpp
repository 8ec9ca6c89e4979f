#include "processes.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <thread>
#include <utility>

namespace avout::testing {

ChildProcess::ChildProcess(int index, const std::function<void(int)>& body) {
  std::fflush(nullptr);  // no buffered output is written twice
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int code = 0;
    try {
      body(index);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "child %d failed: %s\n", index, error.what());
      code = 1;
    } catch (...) {
      std::fprintf(stderr, "child %d failed with a non-standard exception\n", index);
      code = 1;
    }
    std::fflush(nullptr);
    _exit(code);  // never back into the test runner, no static destructors
  }
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept : pid_(std::exchange(other.pid_, -1)) {}

void ChildProcess::signal(int signal_number) {
  if (pid_ > 0) ::kill(pid_, signal_number);
}

int ChildProcess::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
      throw std::runtime_error("child process did not finish in time");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

StartSignal::StartSignal() {
  int ends[2];
  if (pipe(ends) != 0) throw std::runtime_error("pipe failed");
  read_end_ = ends[0];
  write_end_ = ends[1];
}

StartSignal::~StartSignal() {
  if (read_end_ >= 0) close(read_end_);
  if (write_end_ >= 0) close(write_end_);
}

void StartSignal::wait() {
  // The child's inherited copy of the write end would keep the pipe open forever.
  if (write_end_ >= 0) close(write_end_);
  write_end_ = -1;
  char byte;
  while (read(read_end_, &byte, 1) < 0 && errno == EINTR) {
  }
}

void StartSignal::release() {
  // Closing the write end wakes every reader at once (read returns 0).
  close(write_end_);
  write_end_ = -1;
}

std::vector<int> run_in_processes(int count, const std::function<void(int)>& body,
                                  std::chrono::milliseconds timeout) {
  std::vector<ChildProcess> children;
  children.reserve(static_cast<std::size_t>(count));
  for (int index = 0; index < count; ++index) children.emplace_back(index, body);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<int> codes;
  for (auto& child : children) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    codes.push_back(child.wait(std::max(left, std::chrono::milliseconds(1))));
  }
  return codes;
}

bool wait_for_file(const std::filesystem::path& file, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!std::filesystem::exists(file)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace avout::testing
