// Every metric avout records: the names, kinds, help texts and labels (metric_families(),
// docs/metrics.md), and the recorder's calls that spell them.
#include "runtime/metrics_recorder.hpp"

#include <array>

namespace avout {

namespace {
constexpr std::array<std::string_view, 0> no_labels{};
constexpr std::array<std::string_view, 1> cause_label{"cause"};
constexpr std::array<std::string_view, 1> kind_label{"kind"};
constexpr std::array<std::string_view, 1> agent_label{"agent"};
constexpr std::array<std::string_view, 1> event_label{"event"};

// The names, in the order metric_families() lists them.
namespace metric {
constexpr std::string_view commits = "avout_commits_total";
constexpr std::string_view attempts = "avout_transaction_attempts_total";
constexpr std::string_view retries = "avout_transaction_retries_total";
constexpr std::string_view yields = "avout_barging_yields_total";
constexpr std::string_view claims = "avout_barging_claims_total";
constexpr std::string_view commit_duration = "avout_commit_duration_seconds";
constexpr std::string_view lock_wait = "avout_lock_wait_seconds";
constexpr std::string_view lock_timeouts = "avout_lock_timeouts_total";
constexpr std::string_view agent_queue = "avout_agent_queue_length";
constexpr std::string_view action_duration = "avout_agent_action_duration_seconds";
constexpr std::string_view session_events = "avout_session_events_total";
}  // namespace metric

const std::array<MetricFamily, 11> families{{
    {metric::commits, MetricKind::counter, "Transactions (dosync) that committed.", no_labels},
    {metric::attempts, MetricKind::counter,
     "Transaction attempts: runs of a body, and commits recomputed for commutes.", no_labels},
    {metric::retries, MetricKind::counter,
     "Transaction attempts that did not commit and were retried.", cause_label},
    {metric::yields, MetricKind::counter,
     "Attempts that gave way to an older transaction's claim (barging).", no_labels},
    {metric::claims, MetricKind::counter, "Claims an old transaction made on its refs (barging).",
     no_labels},
    {metric::commit_duration, MetricKind::histogram,
     "Time from a dosync's start to its commit, retries included.", no_labels},
    {metric::lock_wait, MetricKind::histogram,
     "Time lock (and permit) acquisitions waited until they held.", kind_label},
    {metric::lock_timeouts, MetricKind::counter,
     "Lock acquisitions that gave up at their deadline.", kind_label},
    {metric::agent_queue, MetricKind::gauge, "Sends of this process waiting to run on an agent.",
     agent_label},
    {metric::action_duration, MetricKind::histogram, "Time agent actions ran.", no_labels},
    {metric::session_events, MetricKind::counter, "Changes of the ZooKeeper session.", event_label},
}};
}  // namespace

std::span<const MetricFamily> metric_families() { return families; }

}  // namespace avout

namespace avout::detail {

namespace {
std::string_view cause_name(RetryCause cause) {
  switch (cause) {
    case RetryCause::conflict: return "conflict";
    case RetryCause::commute_conflict: return "commute_conflict";
    case RetryCause::history_miss: return "history_miss";
    case RetryCause::barging_yield: return "barging_yield";
    case RetryCause::confirmation: return "confirmation";
    case RetryCause::view_changed: return "view_changed";
    case RetryCause::session_renewed: return "session_renewed";
    case RetryCause::session_expired: return "session_expired";
  }
  return "other";
}

std::string_view kind_name(LockKind kind) {
  switch (kind) {
    case LockKind::mutex: return "mutex";
    case LockKind::read: return "read";
    case LockKind::write: return "write";
    case LockKind::semaphore: return "semaphore";
  }
  return "other";
}

std::string_view event_name(SessionEvent event) {
  switch (event) {
    case SessionEvent::connected: return "connected";
    case SessionEvent::disconnected: return "disconnected";
    case SessionEvent::expired: return "expired";
    case SessionEvent::renewed: return "renewed";
    case SessionEvent::auth_failed: return "auth_failed";
  }
  return "other";
}

std::chrono::nanoseconds since(MetricsRecorder::Clock::time_point started) {
  return MetricsRecorder::Clock::now() - started;
}
}  // namespace

void MetricsRecorder::record_attempt() const { sink_->add(metric::attempts, {}, 1); }

void MetricsRecorder::record_retry(RetryCause cause) const {
  const MetricLabel labels[] = {{"cause", cause_name(cause)}};
  sink_->add(metric::retries, labels, 1);
  if (cause == RetryCause::barging_yield) sink_->add(metric::yields, {}, 1);
}

void MetricsRecorder::record_commit(Clock::time_point started) const {
  sink_->add(metric::commits, {}, 1);
  sink_->observe(metric::commit_duration, {}, since(started));
}

void MetricsRecorder::record_claim() const { sink_->add(metric::claims, {}, 1); }

void MetricsRecorder::record_lock_wait(LockKind kind, Clock::time_point started,
                                       bool acquired) const {
  const MetricLabel labels[] = {{"kind", kind_name(kind)}};
  if (acquired) {
    sink_->observe(metric::lock_wait, labels, since(started));
  } else {
    sink_->add(metric::lock_timeouts, labels, 1);
  }
}

void MetricsRecorder::record_agent_queue(std::string_view agent, std::int64_t delta) const {
  const MetricLabel labels[] = {{"agent", agent}};
  sink_->add_to_gauge(metric::agent_queue, labels, delta);
}

void MetricsRecorder::record_action(Clock::time_point started) const {
  sink_->observe(metric::action_duration, {}, since(started));
}

void MetricsRecorder::record_session_event(SessionEvent event) const {
  const MetricLabel labels[] = {{"event", event_name(event)}};
  sink_->add(metric::session_events, labels, 1);
}

}  // namespace avout::detail
