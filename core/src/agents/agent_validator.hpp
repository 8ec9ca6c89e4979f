#pragma once
// An agent handle's validator (Agent::set_validator), under a mutex of its own: set by any
// thread, asked by the worker running a batch and by restart.

#include <avout/bytes.hpp>

#include <functional>
#include <mutex>
#include <utility>

namespace avout::detail {

class AgentValidator {
 public:
  /// Installs `validator` (empty: none).
  void set(std::function<bool(const Bytes&)> validator) {
    std::lock_guard lock(mutex_);
    validator_ = std::move(validator);
  }
  /// False when the validator rejects `value`; called outside the lock (it runs user code).
  bool accepts(const Bytes& value) const {
    std::function<bool(const Bytes&)> validator;
    {
      std::lock_guard lock(mutex_);
      validator = validator_;
    }
    return !validator || validator(value);
  }

 private:
  mutable std::mutex mutex_;  // guards validator_
  std::function<bool(const Bytes&)> validator_;
};

}  // namespace avout::detail
