#pragma once
// avout::MetricsSink: where a client's measurements go (ClientOptions::metrics), and
// PrometheusMetrics, a sink that keeps them in memory and renders them in the Prometheus text
// exposition format. The names, kinds and labels avout records are fixed: metric_families()
// lists them, docs/metrics.md describes them.

#include <avout/export.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace avout {

/// One label of a recorded value: its name and value (valid for the call only).
struct MetricLabel {
  std::string_view name;   ///< e.g. "cause"
  std::string_view value;  ///< e.g. "conflict"
};

/// The labels of one recorded value, in the order its MetricFamily names them.
using MetricLabels = std::span<const MetricLabel>;

/// What a metric family counts.
enum class MetricKind {
  counter,    ///< only grows; its name ends in _total
  gauge,      ///< goes up and down (moved by deltas)
  histogram,  ///< durations, in seconds
};

/// One metric family avout records.
struct MetricFamily {
  std::string_view name;                     ///< e.g. "avout_commits_total"
  MetricKind kind;                           ///< counter, gauge or histogram
  std::string_view help;                     ///< one line of description
  std::span<const std::string_view> labels;  ///< its label names, in order (may be none)
};

/// Every metric family avout records, in a fixed order (docs/metrics.md lists the same).
AVOUT_API std::span<const MetricFamily> metric_families();

/// Receives avout's measurements; write one to feed another system (StatsD, OpenTelemetry).
/// Calls come from any thread of avout, sometimes with avout's own locks held: they must be
/// thread safe and cheap, never block, never throw, never call back into avout. Names and
/// label sets are those of metric_families().
class AVOUT_API MetricsSink {
 public:
  /// A sink is destroyed through this interface (ClientOptions holds a shared_ptr to it).
  virtual ~MetricsSink();
  /// Adds `amount` to the counter `name` with `labels`.
  virtual void add(std::string_view name, MetricLabels labels, std::uint64_t amount) = 0;
  /// Records one duration in the histogram `name` with `labels`.
  virtual void observe(std::string_view name, MetricLabels labels,
                       std::chrono::nanoseconds duration) = 0;
  /// Moves the gauge `name` with `labels` by `delta` (deltas, so that several clients or
  /// handles sharing a sink add up instead of overwriting each other).
  virtual void add_to_gauge(std::string_view name, MetricLabels labels, std::int64_t delta) = 0;
};

/// A MetricsSink that keeps every series in memory (thread safe: a shared lock and atomics
/// when recording, an exclusive lock only for a series' first value) and renders them in the
/// Prometheus text exposition format 0.0.4 for a /metrics endpoint.
class AVOUT_API PrometheusMetrics : public MetricsSink {
 public:
  /// The HTTP Content-Type of render()'s text.
  static constexpr std::string_view content_type = "text/plain; version=0.0.4; charset=utf-8";
  /// The histograms' bucket upper bounds in seconds (0.5 ms to 10 s; +Inf is implied).
  static std::vector<double> default_buckets();

  /// `buckets`: increasing upper bounds in seconds, shared by every histogram; InvalidOption
  /// when not strictly increasing and positive.
  explicit PrometheusMetrics(std::vector<double> buckets = default_buckets());
  /// Frees every series.
  ~PrometheusMetrics() override;
  PrometheusMetrics(const PrometheusMetrics&) = delete;
  PrometheusMetrics& operator=(const PrometheusMetrics&) = delete;

  /// See MetricsSink::add.
  void add(std::string_view name, MetricLabels labels, std::uint64_t amount) override;
  /// See MetricsSink::observe.
  void observe(std::string_view name, MetricLabels labels,
               std::chrono::nanoseconds duration) override;
  /// See MetricsSink::add_to_gauge.
  void add_to_gauge(std::string_view name, MetricLabels labels, std::int64_t delta) override;

  /// Every family as "# HELP" and "# TYPE" lines (once each) and its series: avout's families
  /// in metric_families() order (unlabelled ones from 0), then any other name recorded.
  std::string render() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace avout
