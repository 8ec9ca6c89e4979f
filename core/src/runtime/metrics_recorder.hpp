#pragma once
// detail::MetricsRecorder: the one place the engines record measurements through (the STM
// runner, locks, agents, the session's events), and the one place metric names and label
// values are spelled (metrics_recorder.cpp, with metric_families()). Without a sink every
// call is one branch: no clock read, no allocation, no lock.

#include <avout/metrics.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

namespace avout::detail {

/// Why a transaction's attempt did not commit and another one follows.
enum class RetryCause {
  conflict,          ///< a ref read, written or ensured changed (version check failed)
  commute_conflict,  ///< only commuted refs changed: the commit is recomputed, the body not rerun
  history_miss,      ///< no value old enough in a ref's history, or trimmed while read
  barging_yield,     ///< a ref is claimed by an older transaction: this one gives way
  confirmation,      ///< a validated attempt's reads were not confirmed current (V5)
  view_changed,      ///< a validated attempt's reads were no longer one view (V3)
  session_renewed,   ///< the ZooKeeper session was renewed during the attempt
  session_expired,   ///< the session expired under the attempt (it reruns on the new one)
};

/// Which kind of lock a wait was for (a semaphore's permit counts as one).
enum class LockKind { mutex, read, write, semaphore };

/// A change of the client's ZooKeeper session.
enum class SessionEvent {
  connected,     ///< the same session reconnected after a disconnect
  disconnected,  ///< the connection dropped; the session may live on
  expired,       ///< the session ended
  renewed,       ///< a new session replaced an expired one
  auth_failed,   ///< the server refused the credentials
};

/// Records into the client's MetricsSink, or nowhere. Copyable, cheap; thread safe.
class MetricsRecorder {
 public:
  using Clock = std::chrono::steady_clock;

  /// Records nothing.
  MetricsRecorder() = default;
  /// Records into `sink` (null: nothing).
  explicit MetricsRecorder(std::shared_ptr<MetricsSink> sink) : sink_(std::move(sink)) {}

  /// True when a sink receives the measurements.
  bool enabled() const { return sink_ != nullptr; }
  /// The time a measured span starts: now when enabled, else no clock read (the epoch).
  Clock::time_point start() const { return sink_ ? Clock::now() : Clock::time_point{}; }

  /// A transaction attempt begins (a run of the body, or a commit recomputed for commutes).
  void attempt() const {
    if (sink_) record_attempt();
  }
  /// An attempt ended without a commit and another follows, for `cause`.
  void retry(RetryCause cause) const {
    if (sink_) record_retry(cause);
  }
  /// A dosync committed; `started` is when it began (start()).
  void committed(Clock::time_point started) const {
    if (sink_) record_commit(started);
  }
  /// An old transaction claimed refs for itself (barging).
  void barging_claim() const {
    if (sink_) record_claim();
  }
  /// A lock acquisition (not a reentry) ended: `acquired`, or gave up at its deadline.
  void lock_waited(LockKind kind, Clock::time_point started, bool acquired) const {
    if (sink_) record_lock_wait(kind, started, acquired);
  }
  /// The sends of `agent` waiting in this process moved by `delta`.
  void agent_queue(std::string_view agent, std::int64_t delta) const {
    if (sink_) record_agent_queue(agent, delta);
  }
  /// An agent action ran; `started` is when it began (start()).
  void action_ran(Clock::time_point started) const {
    if (sink_) record_action(started);
  }
  /// The session changed as `event` says.
  void session_event(SessionEvent event) const {
    if (sink_) record_session_event(event);
  }

 private:
  // The recordings behind the checks above, out of line: the inline part stays one branch.
  void record_attempt() const;
  void record_retry(RetryCause cause) const;
  void record_commit(Clock::time_point started) const;
  void record_claim() const;
  void record_lock_wait(LockKind kind, Clock::time_point started, bool acquired) const;
  void record_agent_queue(std::string_view agent, std::int64_t delta) const;
  void record_action(Clock::time_point started) const;
  void record_session_event(SessionEvent event) const;

  std::shared_ptr<MetricsSink> sink_;
};

}  // namespace avout::detail
