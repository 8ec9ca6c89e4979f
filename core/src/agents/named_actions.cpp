#include "agents/named_actions.hpp"

#include <utility>

namespace avout::detail {

void NamedActions::define(const std::string& name, NamedAgentAction action) {
  std::lock_guard lock(mutex_);
  actions_[name] = std::make_shared<const NamedAgentAction>(std::move(action));
}

std::shared_ptr<const NamedAgentAction> NamedActions::find(const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto found = actions_.find(name);
  return found == actions_.end() ? nullptr : found->second;
}

}  // namespace avout::detail
