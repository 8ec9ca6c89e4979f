#pragma once
// avout::TransactionReference<T> (alias avout::Ref<T>): a value changed only inside
// Client::dosync, together with other refs, whatever stores they live in.

#include <avout/codec.hpp>
#include <avout/detail/ref_handle.hpp>
#include <avout/errors.hpp>

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace avout {

class Client;

/// A transactional reference holding a T. Thread safe; copies share one identity.
template <Encodable T>
class TransactionReference {
 public:
  /// Inside dosync: the value as of the transaction's snapshot (or its own write).
  /// Outside: the newest committed value.
  T deref() const { return decoded(core_->deref()); }
  /// Same as deref().
  T operator*() const { return deref(); }

  /// Sets the value to f(value, args...) in the running transaction; returns it.
  template <typename F, typename... Args>
  T alter(F&& f, Args&&... args) {
    T next = static_cast<T>(f(decoded(core_->read_in_transaction()), args...));
    core_->write(encode(next));
    return next;
  }
  /// Applies f(value, args...) now and again at commit to the newest value, so concurrent
  /// commutes never make the transaction retry; returns the value as of now.
  template <typename F, typename... Args>
  T commute(F&& f, Args&&... args) {
    auto apply = [f = std::decay_t<F>(std::forward<F>(f)),
                  bound = std::make_tuple(std::decay_t<Args>(std::forward<Args>(args))...),
                  name = core_->name()](const Bytes& current) {
      return encode(static_cast<T>(std::apply(
          [&](const auto&... arguments) { return f(decoded(current, name), arguments...); },
          bound)));
    };
    return decoded(core_->commute(std::move(apply)));
  }
  /// Returns the value and makes the running transaction commit only if no other one changed
  /// this ref meanwhile (checked at commit, like a write: prevents write skew).
  T ensure() { return decoded(core_->ensure()); }
  /// Sets the value in the running transaction; returns it.
  T ref_set(const T& value) {
    core_->write(encode(value));
    return value;
  }

  /// Installs a validator for this handle and its copies, checked before every commit that
  /// changes the ref; throws ValidationError (keeping the old one) when the current value fails.
  void set_validator(std::function<bool(const T&)> validator) {
    if (validator && !validator(deref())) {
      throw ValidationError("ref " + core_->name() + ": current value fails the validator");
    }
    if (!validator) return core_->set_validator({});
    core_->set_validator([validator, name = core_->name()](const Bytes& bytes) {
      return validator(decoded(bytes, name));
    });
  }
  /// Adds (or replaces) the watch `key`, called with (old, new) after commits by any process
  /// on the client's callback thread; quick successive commits may coalesce.
  void add_watch(const std::string& key, std::function<void(const T&, const T&)> watch) {
    core_->add_watch(key, detail::typed_watch<T>(std::move(watch)));
  }
  /// Removes the watch `key`; once it returns no call of that watch runs or will run (called
  /// from inside a watch, it returns at once and no later call of `key` starts).
  void remove_watch(const std::string& key) { core_->remove_watch(key); }
  /// The ref's name.
  const std::string& name() const { return core_->name(); }

 private:
  friend class Client;
  template <Encodable... U>
  requires(sizeof...(U) >
           0) friend std::tuple<U...> deref_all(const TransactionReference<U>&... refs);
  explicit TransactionReference(std::shared_ptr<detail::RefHandle> core) : core_(std::move(core)) {}
  // A stored value as a T; CodecError naming the ref `name` when it is not one. Closures
  // that outlive a handle (a commute, a validator) keep the name, not the handle.
  static T decoded(const Bytes& bytes, const std::string& name) {
    return codec::decode_named<T>(bytes, "ref", name);
  }
  T decoded(const Bytes& bytes) const { return decoded(bytes, core_->name()); }

  std::shared_ptr<detail::RefHandle> core_;
};

/// Short name of TransactionReference.
template <Encodable T>
using Ref = TransactionReference<T>;

namespace detail {
/// deref_all's values, decoded each as its ref's type; `names` name the refs for errors.
template <Encodable... T, std::size_t... I>
std::tuple<T...> decode_ref_values(const std::vector<Bytes>& values,
                                   const std::array<const std::string*, sizeof...(T)>& names,
                                   std::index_sequence<I...>) {
  return std::tuple<T...>{codec::decode_named<T>(values[I], "ref", *names[I])...};
}
}  // namespace detail

/// The values of several refs of one client, their heads read in one round trip and the
/// values not cached in one per store, where deref() one after another waits for each in
/// turn: inside dosync, as of its snapshot; outside, from one snapshot of their own (a
/// read-only transaction). Throws Error when the refs belong to different clients.
template <Encodable... T>
requires(sizeof...(T) > 0) std::tuple<T...> deref_all(const TransactionReference<T>&... refs) {
  const std::vector<Bytes> values =
      std::get<0>(std::tie(refs...)).core_->deref_together({refs.core_.get()...});
  return detail::decode_ref_values<T...>(values, {&refs.name()...},
                                         std::index_sequence_for<T...>{});
}

}  // namespace avout
