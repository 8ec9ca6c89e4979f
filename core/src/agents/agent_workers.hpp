#pragma once
// The threads agent actions run on: a fixed pool sized to the cores for send(), a pool that
// grows with the work for send_off() (blocking actions must not starve the others).

#include <avout/logger.hpp>

#include <functional>
#include <memory>
#include <stop_token>

namespace avout::detail {

class AgentCore;

class AgentWorkers {
 public:
  /// Starts the fixed pool; `logger` (empty: the default one) hears of tasks that threw.
  explicit AgentWorkers(Logger logger);
  ~AgentWorkers();
  AgentWorkers(const AgentWorkers&) = delete;
  AgentWorkers& operator=(const AgentWorkers&) = delete;

  /// Runs `task` on the send_off pool when `blocking`, else on the fixed pool.
  void post(bool blocking, std::function<void()> task);
  /// Keeps `agent` alive while it has queued sends, even when every handle is gone; counted.
  void retain(const std::shared_ptr<AgentCore>& agent);
  /// Ends one retain(); the agent is let go when none is left.
  void release(const AgentCore* agent);
  /// Where agent messages go.
  const Logger& logger() const { return logger_; }
  /// Finishes the running tasks, drops the queued ones and every retained agent.
  void stop();
  /// True once stop() began: a task still retrying should give up.
  bool stopping() const;
  /// Stopped once stop() began: a Deadline of it ends a task's wait for ZooKeeper then.
  std::stop_token stop_token() const;

 private:
  struct Impl;
  Logger logger_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace avout::detail
