#pragma once
// A small parser of the Prometheus text exposition format 0.0.4, for tests that check what
// PrometheusMetrics::render() and the metrics example serve: it checks the format as it reads
// (HELP and TYPE once per family, TYPE before the family's samples, well-formed labels).

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace avout::testing {

/// One sample line: its metric name (with a _bucket/_sum/_count suffix), labels and value.
struct PrometheusSample {
  std::string name;                           ///< e.g. avout_lock_wait_seconds_bucket
  std::map<std::string, std::string> labels;  ///< unescaped values
  double value = 0;                           ///< +Inf parses as infinity
};

/// A parsed exposition.
struct PrometheusText {
  std::map<std::string, std::string> help;  ///< family -> its HELP text (unescaped)
  std::map<std::string, std::string> type;  ///< family -> counter, gauge, histogram...
  std::vector<PrometheusSample> samples;    ///< in the order of the text

  /// The value of the sample `name` whose labels are exactly `labels`; nullopt when none.
  std::optional<double> value(const std::string& name,
                              const std::map<std::string, std::string>& labels = {}) const;
  /// The sum of every sample named `name` (0 when none).
  double sum(const std::string& name) const;
};

/// Parses `text`; throws std::runtime_error naming the line when it breaks the format.
PrometheusText parse_prometheus(const std::string& text);

}  // namespace avout::testing
