#pragma once
// avout::DistributedAtom<T> (alias avout::Atom<T>): one value shared by many processes,
// changed by compare-and-set. Copies of an Atom share one identity, validator and watches.
//
// What the calls throw (all derive from avout::Error):
//   ConnectionLoss / SessionExpired  ZooKeeper unreachable before anything was written
//   BackendError       the value's store failed before anything was written
//   OutcomeUnknown     a write's reply was lost, or the deadline expired with a write in
//                      flight, and whether it landed could not be found out (not a
//                      ConnectionLoss: do not simply write again)
//   CommittedWithError the value is stored, but its change notice could not be sent (by
//                      the deadline)
//   Timeout            the deadline (or ClientOptions::operation_timeout) expired between
//                      attempts or while a read waited for ZooKeeper; nothing was written
//                      by the call
// A call given a deadline returns within it (plus a few ms), whatever ZooKeeper does.
//   RetryLimitExceeded other writers kept winning for ClientOptions::retry_limit attempts
//   ValidationError    the validator rejected the new value; nothing was written
//   ValueTooLarge      the encoded value exceeds the store's limit; nothing was written
//   CodecError         the stored bytes are not a T (names the atom)

#include <avout/codec.hpp>
#include <avout/deadline.hpp>
#include <avout/detail/atom_handle.hpp>
#include <avout/detail/typed_watch.hpp>
#include <avout/errors.hpp>

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace avout {

class Client;

/// A distributed atom holding a T. Thread safe.
template <Encodable T>
class DistributedAtom {
 public:
  /// Decides whether a new value may be stored.
  using Validator = std::function<bool(const T&)>;
  /// Called with (old value, new value) after a change, in every process watching.
  using Watch = std::function<void(const T&, const T&)>;

  /// The newest stored value (bounded by ClientOptions::operation_timeout when set).
  T deref() const { return decode_payload(core_->read(core_->default_deadline())); }
  /// Same as deref().
  T operator*() const { return deref(); }

  /// Replaces the value with f(value, args...), retrying while other writers get in first;
  /// returns the value it stored. `f` may run several times: keep it free of side effects.
  /// Retries pause for a jittered, growing time; ClientOptions::operation_timeout (if set)
  /// bounds them (Timeout).
  template <typename F, typename... Args>
  requires(!std::is_convertible_v<F&&, Deadline>) T swap(F&& f, Args&&... args) {
    return swap_vals(core_->default_deadline(), std::forward<F>(f), std::forward<Args>(args)...)
        .second;
  }
  /// Like swap, giving up with Timeout ("atom NAME: swap: deadline passed after N attempts")
  /// once `deadline` expired. It is checked between attempts and bounds the pauses and every
  /// wait for ZooKeeper: a read cut short is Timeout, a write cut short OutcomeUnknown (a
  /// lost reply found out in time is resolved as usual).
  template <typename F, typename... Args>
  T swap(const Deadline& deadline, F&& f, Args&&... args) {
    return swap_vals(deadline, std::forward<F>(f), std::forward<Args>(args)...).second;
  }
  /// Like swap, but returns {old value, new value}.
  template <typename F, typename... Args>
  requires(!std::is_convertible_v<F&&, Deadline>) std::pair<T, T> swap_vals(F&& f, Args&&... args) {
    return swap_vals(core_->default_deadline(), std::forward<F>(f), std::forward<Args>(args)...);
  }
  /// Like swap(deadline, f, args...), but returns {old value, new value}.
  template <typename F, typename... Args>
  std::pair<T, T> swap_vals(const Deadline& deadline, F&& f, Args&&... args) {
    return update("swap", deadline, [&](const T& old) { return static_cast<T>(f(old, args...)); });
  }
  /// Sets the value unconditionally; returns it.
  T reset(const T& value) { return reset_vals(value).second; }
  /// Sets the value unconditionally by `deadline`; returns it.
  T reset(const Deadline& deadline, const T& value) { return reset_vals(deadline, value).second; }
  /// Sets the value unconditionally; returns {old value, new value}.
  std::pair<T, T> reset_vals(const T& value) {
    return reset_vals(core_->default_deadline(), value);
  }
  /// Sets the value unconditionally by `deadline`; returns {old value, new value}.
  std::pair<T, T> reset_vals(const Deadline& deadline, const T& value) {
    return update("reset", deadline, [&](const T&) { return value; });
  }
  /// Sets `next` only if the current value equals `expected`; true when it did.
  bool compare_and_set(const T& expected, const T& next) {
    return compare_and_set(core_->default_deadline(), expected, next);
  }
  /// Like compare_and_set, giving up with Timeout once `deadline` expired (it retries only
  /// while other writers store the expected value again).
  bool compare_and_set(const Deadline& deadline, const T& expected, const T& next) {
    const Bytes expected_bytes = encode(expected);
    check(next);
    Bytes next_bytes = encode(next);
    for (std::size_t attempt = 0; attempt < core_->retry_limit(); ++attempt) {
      if (attempt > 0) core_->pause_before_retry("compare_and_set", attempt, deadline);
      auto snapshot = core_->read(deadline);
      if (snapshot.envelope.payload != expected_bytes) return false;
      if (core_->write(snapshot, next_bytes, deadline)) return true;
    }
    throw RetryLimitExceeded("atom " + core_->name() + ": compare_and_set gave up");
  }

  /// Installs a validator (this handle and its copies only); throws ValidationError, and
  /// keeps the old one, when the current value fails it.
  void set_validator(Validator validator) {
    if (validator && !validator(deref())) {
      throw ValidationError("atom " + core_->name() + ": current value fails the validator");
    }
    std::lock_guard lock(shared_->mutex);
    shared_->validator = std::move(validator);
  }
  /// Adds (or replaces) the watch called `key`. It runs on the client's callback thread
  /// after a change by any process; changes in quick succession may coalesce into one call
  /// with the newest value.
  void add_watch(const std::string& key, Watch watch) {
    core_->add_watch(key, detail::typed_watch<T>(std::move(watch)));
  }
  /// Removes the watch `key`; once it returns no call of that watch runs or will run (called
  /// from inside a watch, it returns at once and no later call of `key` starts).
  void remove_watch(const std::string& key) { core_->remove_watch(key); }
  /// The atom's name.
  const std::string& name() const { return core_->name(); }

 private:
  friend class Client;
  explicit DistributedAtom(std::shared_ptr<detail::AtomHandle> core)
      : core_(std::move(core)), shared_(std::make_shared<Shared>()) {}

  struct Shared {
    std::mutex mutex;
    Validator validator;
  };

  void create_if_absent(const T& initial) {
    auto snapshot = core_->read(Deadline{});
    if (snapshot.stored.exists()) return;
    check(initial);
    core_->write(snapshot, encode(initial), Deadline{});  // false: another process created it first
  }

  template <typename Next>
  std::pair<T, T> update(const char* call, const Deadline& deadline, Next next_value) {
    for (std::size_t attempt = 0; attempt < core_->retry_limit(); ++attempt) {
      if (attempt > 0) core_->pause_before_retry(call, attempt, deadline);
      auto snapshot = core_->read(deadline);
      T old = decode_payload(snapshot);
      T next = next_value(old);
      check(next);
      if (core_->write(snapshot, encode(next), deadline)) return {std::move(old), std::move(next)};
    }
    throw RetryLimitExceeded("atom " + core_->name() + ": gave up after " +
                             std::to_string(core_->retry_limit()) + " attempts");
  }

  T decode_payload(const detail::AtomSnapshot& snapshot) const {
    if (!snapshot.stored.exists()) {
      throw BackendError("atom " + core_->name() + ": no value stored (deleted underneath?)");
    }
    return codec::decode_named<T>(snapshot.envelope.payload, "atom", core_->name());
  }

  void check(const T& value) {
    Validator validator;
    {
      std::lock_guard lock(shared_->mutex);
      validator = shared_->validator;
    }
    if (validator && !validator(value)) {
      throw ValidationError("atom " + core_->name() + ": the validator rejected the new value");
    }
  }

  std::shared_ptr<detail::AtomHandle> core_;
  std::shared_ptr<Shared> shared_;
};

/// Short name of DistributedAtom.
template <Encodable T>
using Atom = DistributedAtom<T>;

}  // namespace avout
