#pragma once
// avout::Deadline: when a blocking call (dosync, Atom::swap, Lock::lock, Agent::send, ...)
// gives up with Timeout: a steady_clock time point, a std::stop_token, both, or neither.
//
// The deadline is checked between attempts and bounds every wait (condition waits, back-off
// sleeps, replies from ZooKeeper), so a call returns within a few milliseconds of it even
// while ZooKeeper answers nothing: a read in flight is abandoned with Timeout, and a write in
// flight whose outcome cannot be known by then is OutcomeUnknown, never Timeout. A round trip
// to a value store (Redis, PostgreSQL) is bounded by that store's own command timeout. A
// call that gives up leaves nothing half-done (no lock request node, no claim, no send node).

#include <avout/export.hpp>

#include <chrono>
#include <optional>
#include <stop_token>
#include <string>

namespace avout {

/// A time limit and/or a cancellation request for one blocking call. Cheap to copy.
class AVOUT_API Deadline {
 public:
  /// The clock deadlines are measured on.
  using Clock = std::chrono::steady_clock;

  /// No limit and no cancellation.
  Deadline() = default;
  /// Cancelled when `stop` is requested (no time limit).
  Deadline(std::stop_token stop) : stop_(std::move(stop)) {}  // NOLINT: implicit on purpose

  /// Expires `duration` from now.
  static Deadline after(Clock::duration duration) { return at(Clock::now() + duration); }
  /// Expires at `when`.
  static Deadline at(Clock::time_point when) {
    Deadline deadline;
    deadline.when_ = when;
    return deadline;
  }

  /// This deadline, also cancelled by `stop` (replacing a token it had).
  Deadline with_stop(std::stop_token stop) const {
    Deadline deadline = *this;
    deadline.stop_ = std::move(stop);
    return deadline;
  }
  /// This deadline, expiring at `when` at the latest (the earlier of the two times).
  Deadline no_later_than(Clock::time_point when) const {
    Deadline deadline = *this;
    if (!deadline.when_ || when < *deadline.when_) deadline.when_ = when;
    return deadline;
  }

  /// True once the time passed or the stop was requested.
  bool expired() const { return stop_requested() || (when_ && Clock::now() >= *when_); }
  /// True once the stop token was asked to stop.
  bool stop_requested() const { return stop_.stop_requested(); }
  /// True when it has a time limit or a token that can be stopped (false: waits forever).
  bool bounded() const { return when_.has_value() || stop_.stop_possible(); }
  /// The time limit, if any.
  const std::optional<Clock::time_point>& time() const { return when_; }
  /// The time limit, or a point ten years away (keeps waits' arithmetic finite).
  Clock::time_point time_or_far() const {
    return when_ ? *when_ : Clock::now() + std::chrono::hours(24 * 365 * 10);
  }
  /// The stop token (default-constructed: never stops).
  const std::stop_token& stop_token() const { return stop_; }

  /// Sleeps `pause`, shortened to the deadline and woken early by a stop request; false
  /// when the deadline expired.
  bool sleep_for(Clock::duration pause) const;
  /// "deadline passed" or "cancelled": the reason for a Timeout's message.
  std::string reason() const;
  /// Throws Timeout("<what>: <reason()>").
  [[noreturn]] void expire(const std::string& what) const;

 private:
  std::optional<Clock::time_point> when_;
  std::stop_token stop_;
};

}  // namespace avout
