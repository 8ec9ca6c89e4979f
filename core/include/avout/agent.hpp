#pragma once
// avout::Agent<T>: a value changed by actions sent to it. Actions run one at a time, in the
// order the sends were made across all processes, each sees the value the previous one left.
// A closure runs on a worker of the process that sent it; a named action (define, then
// send("name", args...)) on a worker of any process that defined the name, so a run of
// sends from several processes commits as one batch. A store or ZooKeeper outage delays
// actions (one may then run again, only one result is kept); only an action that throws or
// whose value the validator refuses fails the agent, and its own sends are dropped with it.
//
// What the calls throw (all derive from avout::Error): ConnectionLoss or SessionExpired when
// ZooKeeper is unreachable and nothing was changed (safe to call again); OutcomeUnknown (not
// a ConnectionLoss: not safe to call again blindly) when a write may have landed and
// ZooKeeper stayed unreachable while avout tried to find out (Client::agent and restart), or
// when a named send may have been run by another process before its sender could tell (see
// send: it runs once or never); Timeout when a send's or await's deadline (or
// ClientOptions::operation_timeout for a send) expired, leaving no send behind: the action
// never runs;
// UndefinedAction when a send names an action this handle never defined (nothing sent);
// BackendError when the value's store fails; CodecError when the stored bytes are not a T.
// Each call below names the others.

#include <avout/codec.hpp>
#include <avout/deadline.hpp>
#include <avout/detail/agent_handle.hpp>
#include <avout/errors.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace avout {

class Client;

/// A distributed agent holding a T. Thread safe; copies share one identity.
template <Encodable T>
class Agent {
 public:
  /// The newest stored value. A value a batch replaced and erased between the head's read and
  /// the value's is read again under the newer head (rule 8). Throws ConnectionLoss,
  /// SessionExpired, BackendError (only while the head still names a value missing from its
  /// store: lost data), CodecError.
  T deref() const { return codec::decode_named<T>(core_->read_latest(), "agent", core_->name()); }
  /// Same as deref().
  T operator*() const { return deref(); }

  /// Queues f(value, args...) and returns once its place in the global order is fixed (one
  /// ZooKeeper round trip), without waiting for it to run; it runs on the fixed worker pool.
  /// When `f` is a name, queues the action define()d under it with `args` (UndefinedAction
  /// when this handle defined none, CodecError when `args` do not fit its parameters,
  /// ValueTooLarge when they would not fit one ZooKeeper request, about 960 KB: nothing is
  /// sent; made by an action, it fails that action); any process that defined the name may
  /// run it. A named send of a process that dies is dropped with its session like a
  /// closure's.
  /// Inside dosync the send goes out only if (and once) the transaction commits; inside an
  /// action, once that action's value is stored (its create made again while ZooKeeper stays
  /// unreachable, until it is made or the client closes). Throws AgentFailed while the agent is
  /// failed; Timeout once ClientOptions::operation_timeout (if set) passed (see send(deadline,
  /// ...)); ConnectionLoss when ZooKeeper stayed unreachable for three session timeouts (the send
  /// was not made and nothing of it is left: sending again is safe), or SessionExpired.
  /// A lost create reply is resolved by finding the send's node by its unique tag, asked
  /// again until ZooKeeper answers (silence never means "not there"); a named
  /// send whose node is not found while the agent's head moved since the send was made
  /// (another process may have run it and deleted its node) is not sent again: it throws
  /// OutcomeUnknown (the action ran once or never). A closure not found is sent again: only
  /// its sender's process runs it. Inside dosync, failures are the transaction's
  /// (OutcomeUnknown from its commit: its send, if it landed, is found and run afterwards).
  template <typename F, typename... Args>
  requires(!std::is_convertible_v<F&&, Deadline>) void send(F&& f, Args&&... args) {
    send(core_->default_deadline(), std::forward<F>(f), std::forward<Args>(args)...);
  }
  /// Like send, giving up with Timeout ("agent NAME: send: deadline passed", or "cancelled"
  /// once its stop token was stopped, noticed within 50 ms) when `deadline` expires before
  /// the send node's create was answered. A Timeout means the action will not run: the create
  /// was not sent, or it is a closure's, which only this process runs and it never will; the
  /// create is settled in the background (its node, found by the send's unique tag once
  /// ZooKeeper answers, is deleted; a session that ends takes it along), so nothing waits in
  /// the queue for an action nobody will run. A named send whose create went out throws
  /// OutcomeUnknown instead: its node may be there already and any process that defined the
  /// name (this one too) may run it before the background delete, so it runs once or never.
  /// Inside dosync or an action the send is part of that commit and the deadline is ignored
  /// (the dosync's own deadline bounds it).
  template <typename F, typename... Args>
  void send(const Deadline& deadline, F&& f, Args&&... args) {
    dispatch(false, deadline, std::forward<F>(f), std::forward<Args>(args)...);
  }
  /// Like send, for actions that block (I/O): they run on a pool that grows as needed.
  template <typename F, typename... Args>
  requires(!std::is_convertible_v<F&&, Deadline>) void send_off(F&& f, Args&&... args) {
    send_off(core_->default_deadline(), std::forward<F>(f), std::forward<Args>(args)...);
  }
  /// Like send(deadline, f, args...), for actions that block (see send_off).
  template <typename F, typename... Args>
  void send_off(const Deadline& deadline, F&& f, Args&&... args) {
    dispatch(true, deadline, std::forward<F>(f), std::forward<Args>(args)...);
  }

  /// Defines the action `action` for this handle's process: f(value, args...) gives the next
  /// value, where each argument type is Encodable (decayed: `long`, `const std::string&`).
  /// send("action", args...) and send_off then queue it by name: the send node holds the name
  /// and the encoded arguments, so any process that defined the name may run it (in queue
  /// order, one batch commit for a run of queued sends it can run), not only the sender. A
  /// named send no other process knows waits for its sender. Every process that defines a
  /// name must give it the same meaning. Defining a name again replaces its action here.
  template <typename F>
  void define(const std::string& action, F&& f) {
    define_function(action, std::function{std::forward<F>(f)});
  }

  /// Blocks until every action this process sent before the call has run (sends other
  /// threads make meanwhile are not waited for). Throws Error inside an action or a
  /// transaction, Timeout once ClientOptions::operation_timeout (if set) passed (see
  /// await(deadline)), SessionExpired (once) when some of them were dropped because this
  /// process's session expired, AgentFailed (once, with the agent's error) when some of
  /// them were dropped unrun because the agent had failed (an action before them threw or
  /// was refused by a validator). A named send another process's batch dropped that way is
  /// not told apart from one it ran: error() says whether the agent failed.
  void await() { await(core_->default_deadline()); }
  /// Like await(), but Timeout ("agent NAME: await timed out") after `limit`.
  void await(std::chrono::milliseconds limit) {
    if (!await_for(limit)) throw Timeout("agent " + core_->name() + ": await timed out");
  }
  /// Like await, bounded by `deadline` instead: Timeout ("agent NAME: await: deadline
  /// passed", or "cancelled" once its stop token was stopped).
  void await(const Deadline& deadline) {
    if (!core_->await_until(deadline)) deadline.expire("agent " + core_->name() + ": await");
  }
  /// Like await, but returns false instead of throwing Timeout when `timeout` passes (throws
  /// Error, SessionExpired and AgentFailed as await does).
  bool await_for(std::chrono::milliseconds timeout) {
    return core_->await_until(Deadline::after(timeout));
  }

  /// The error of the action that failed the agent (in any process), or nullopt. Throws
  /// ConnectionLoss or SessionExpired.
  std::optional<std::string> error() const { return core_->error(); }
  /// Clears a failed agent's error and sets its value. Throws Error when it is not failed,
  /// ValidationError or ValueTooLarge (nothing changed), BackendError, RetryLimitExceeded
  /// when other restarts kept winning, and OutcomeUnknown when the restart may have landed
  /// and ZooKeeper stayed unreachable (error() tells afterwards whether it did).
  void restart(const T& value) { core_->restart(encode(value)); }

  /// Installs a validator for actions run by this process (empty: none); an action whose
  /// result it rejects fails the agent with a ValidationError message. Throws
  /// ValidationError (installing nothing) when the current value fails it.
  void set_validator(std::function<bool(const T&)> validator) {
    if (validator && !validator(deref())) {
      throw ValidationError("agent " + core_->name() + ": current value fails the validator");
    }
    if (!validator) return core_->set_validator({});
    core_->set_validator([validator](const Bytes& bytes) { return validator(decode<T>(bytes)); });
  }
  /// The agent's name.
  const std::string& name() const { return core_->name(); }

 private:
  friend class Client;
  explicit Agent(std::shared_ptr<detail::AgentHandle> core) : core_(std::move(core)) {}

  // A send of a closure, or of a named action when `f` is a name.
  template <typename F, typename... Args>
  void dispatch(bool blocking, const Deadline& deadline, F&& f, Args&&... args) {
    if constexpr (std::is_convertible_v<F&&, std::string_view>) {
      static_assert((Encodable<std::decay_t<Args>> && ...),
                    "arguments of a named action must be Encodable");
      core_->send_named(std::string(std::string_view(f)),
                        encode(std::make_tuple(std::decay_t<Args>(std::forward<Args>(args))...)),
                        blocking, deadline);
    } else {
      core_->send(bind(std::forward<F>(f), std::forward<Args>(args)...), blocking, deadline);
    }
  }

  template <typename R, typename Value, typename... Args>
  void define_function(const std::string& action, std::function<R(Value, Args...)> f) {
    static_assert(std::is_convertible_v<R, T>, "a named action returns the agent's value");
    static_assert(std::is_convertible_v<T, Value>, "a named action takes the agent's value first");
    using Arguments = std::tuple<std::decay_t<Args>...>;
    static_assert((Encodable<std::decay_t<Args>> && ...),
                  "arguments of a named action must be Encodable");
    detail::NamedAgentAction named;
    named.run = [f = std::move(f)](const Bytes& current, const Bytes& arguments) {
      const auto bound = decode<Arguments>(arguments);
      return encode(static_cast<T>(
          std::apply([&](const auto&... each) { return f(decode<T>(current), each...); }, bound)));
    };
    named.check = [](const Bytes& arguments) { (void)decode<Arguments>(arguments); };
    core_->define(action, std::move(named));
  }

  template <typename F, typename... Args>
  static detail::AgentAction bind(F&& f, Args&&... args) {
    return [f = std::decay_t<F>(std::forward<F>(f)),
            bound = std::make_tuple(std::decay_t<Args>(std::forward<Args>(args))...)](
               const Bytes& current) {
      return encode(static_cast<T>(std::apply(
          [&](const auto&... arguments) { return f(decode<T>(current), arguments...); }, bound)));
    };
  }

  std::shared_ptr<detail::AgentHandle> core_;
};

}  // namespace avout
