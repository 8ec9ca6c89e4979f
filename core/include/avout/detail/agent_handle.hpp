#pragma once
// What Agent<T> needs of an agent: byte-level calls on an opaque core (its queue recipe,
// records and workers live in the library's sources).

#include <avout/bytes.hpp>
#include <avout/deadline.hpp>
#include <avout/export.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace avout::detail {

/// An action on encoded values: takes the current value, gives the next.
using AgentAction = std::function<Bytes(const Bytes&)>;

/// A named action on encoded values: takes the current value and the encoded arguments.
struct NamedAgentAction {
  /// Gives the next value from the current one and the arguments.
  std::function<Bytes(const Bytes& value, const Bytes& arguments)> run;
  /// Throws CodecError when the encoded arguments do not fit the action's parameters.
  std::function<void(const Bytes& arguments)> check;
};

/// One agent of one client, as its typed handles see it. Implemented by the library.
class AVOUT_API AgentHandle {
 public:
  virtual ~AgentHandle() = default;
  /// The agent's name.
  virtual const std::string& name() const = 0;
  /// Creates the agent with `initial` unless it exists already.
  virtual void create_if_absent(const Bytes& initial) = 0;
  /// The newest stored value.
  virtual Bytes read_latest() = 0;
  /// CodecError naming both kinds when the stored value is another kind than `sample`.
  virtual void require_kind(const Bytes& sample) = 0;
  /// Queues `action` by `deadline` (ignored inside dosync or an action); `blocking` picks
  /// the send_off workers.
  virtual void send(AgentAction action, bool blocking, const Deadline& deadline) = 0;
  /// Registers `action` as `name` for this process (replacing one of that name).
  virtual void define(const std::string& name, NamedAgentAction action) = 0;
  /// Queues the action defined as `name` with its encoded `arguments`, like send; throws
  /// UndefinedAction (nothing sent) when this process has not defined `name`.
  virtual void send_named(const std::string& name, Bytes arguments, bool blocking,
                          const Deadline& deadline) = 0;
  /// The deadline of a send given none: the client's operation_timeout from now, or none.
  virtual Deadline default_deadline() const = 0;
  /// Waits until every action this process sent before the call has run; false once
  /// `deadline` expired (its stop token included).
  virtual bool await_until(const Deadline& deadline) = 0;
  /// The error of the failed action that stopped the agent, if any.
  virtual std::optional<std::string> error() = 0;
  /// Clears a failed agent's error and sets its value.
  virtual void restart(const Bytes& value) = 0;
  /// Installs a validator (empty: none).
  virtual void set_validator(std::function<bool(const Bytes&)> validator) = 0;
};

}  // namespace avout::detail
