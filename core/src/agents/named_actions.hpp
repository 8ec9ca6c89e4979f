#pragma once
// The named actions one agent handle defined (Agent::define): looked up by the sender of a
// named send and by the worker that runs other processes' named sends, under a mutex of their
// own (the worker looks them up while it holds the agent's).

#include <avout/detail/agent_handle.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace avout::detail {

class NamedActions {
 public:
  /// Registers `action` under `name`, replacing one of the same name.
  void define(const std::string& name, NamedAgentAction action);
  /// The action defined under `name`; null when none is.
  std::shared_ptr<const NamedAgentAction> find(const std::string& name) const;

 private:
  mutable std::mutex mutex_;  // guards actions_
  std::map<std::string, std::shared_ptr<const NamedAgentAction>> actions_;
};

}  // namespace avout::detail
