// PrometheusMetrics: series kept in memory, rendered in the Prometheus text format 0.0.4.
// Recording takes a shared lock for the lookups and moves atomics; only a series' first value
// takes the exclusive lock. A series' key is its rendered label text, so render() writes it
// as is.
#include <avout/errors.hpp>
#include <avout/metrics.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace avout {

MetricsSink::~MetricsSink() = default;

namespace {

// Looks strings up by std::string_view without making a std::string.
struct TextHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const noexcept {
    return std::hash<std::string_view>{}(text);
  }
};

// One label set's values of a family.
struct Series {
  explicit Series(std::string labels, std::size_t buckets)
      : labels(std::move(labels)), bucket_counts(buckets) {}
  std::string labels;  // rendered: name="value",... (no braces)
  std::atomic<std::uint64_t> total{0};
  std::atomic<std::int64_t> gauge{0};
  std::vector<std::atomic<std::uint64_t>> bucket_counts;  // histograms: per bucket, +Inf last
  std::atomic<std::uint64_t> sum_nanoseconds{0};
};

struct Family {
  std::string name;
  MetricKind kind = MetricKind::counter;
  std::string help;
  std::vector<std::unique_ptr<Series>> series;  // in the order first recorded
  std::unordered_map<std::string, Series*, TextHash, std::equal_to<>> by_labels;
};

// Label values escape backslash, double quote and line feed; help text the first and last.
void append_escaped(std::string& out, std::string_view text, bool quote) {
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

void append_labels(std::string& out, MetricLabels labels) {
  for (const auto& label : labels) {
    if (!out.empty()) out += ',';
    out += label.name;
    out += "=\"";
    append_escaped(out, label.value, true);
    out += '"';
  }
}

void append_number(std::string& out, double value) {
  char buffer[64];
  const auto written = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, written.ptr);
}

std::string_view kind_name(MetricKind kind) {
  switch (kind) {
    case MetricKind::counter: return "counter";
    case MetricKind::gauge: return "gauge";
    case MetricKind::histogram: return "histogram";
  }
  return "untyped";
}

// One sample line: name{labels[,extra]} value.
void append_sample(std::string& out, std::string_view name, const std::string& labels,
                   std::string_view extra, std::string_view value) {
  out += name;
  if (!labels.empty() || !extra.empty()) {
    out += '{';
    out += labels;
    if (!labels.empty() && !extra.empty()) out += ',';
    out += extra;
    out += '}';
  }
  out += ' ';
  out += value;
  out += '\n';
}

}  // namespace

struct PrometheusMetrics::State {
  std::vector<double> bounds;  // bucket upper bounds, seconds
  mutable std::shared_mutex mutex;
  std::vector<std::unique_ptr<Family>> families;  // render order
  std::unordered_map<std::string, Family*, TextHash, std::equal_to<>> by_name;

  Family& add_family(std::string_view name, MetricKind kind, std::string_view help) {
    auto family = std::make_unique<Family>();
    family->name = name;
    family->kind = kind;
    family->help = help;
    by_name.emplace(family->name, family.get());
    families.push_back(std::move(family));
    return *families.back();
  }

  Series& add_series(Family& family, const std::string& labels) {
    const std::size_t buckets = family.kind == MetricKind::histogram ? bounds.size() + 1 : 0;
    family.series.push_back(std::make_unique<Series>(labels, buckets));
    family.by_labels.emplace(labels, family.series.back().get());
    return *family.series.back();
  }

  // The series of `name` with `labels`, made on first use; null when `name` is of another kind.
  Series* find(std::string_view name, MetricKind kind, MetricLabels labels) {
    thread_local std::string key;  // reused: no allocation once it is large enough
    key.clear();
    append_labels(key, labels);
    {
      std::shared_lock lock(mutex);
      if (auto family = by_name.find(name); family != by_name.end()) {
        if (family->second->kind != kind) return nullptr;
        auto found = family->second->by_labels.find(std::string_view(key));
        if (found != family->second->by_labels.end()) return found->second;
      }
    }
    std::unique_lock lock(mutex);
    auto family = by_name.find(name);
    Family& target = family != by_name.end() ? *family->second : add_family(name, kind, {});
    if (target.kind != kind) return nullptr;
    auto found = target.by_labels.find(std::string_view(key));
    return found != target.by_labels.end() ? found->second : &add_series(target, key);
  }

  void render_family(std::string& out, const Family& family) const {
    if (!family.help.empty()) {
      out += "# HELP ";
      out += family.name;
      out += ' ';
      append_escaped(out, family.help, false);
      out += '\n';
    }
    out += "# TYPE ";
    out += family.name;
    out += ' ';
    out += kind_name(family.kind);
    out += '\n';
    for (const auto& series : family.series) {
      if (family.kind == MetricKind::counter) {
        append_sample(out, family.name, series->labels, {}, std::to_string(series->total.load()));
      } else if (family.kind == MetricKind::gauge) {
        append_sample(out, family.name, series->labels, {}, std::to_string(series->gauge.load()));
      } else {
        render_histogram(out, family.name, *series);
      }
    }
  }

  // Buckets are counted one by one and summed here, so each is cumulative and +Inf == count
  // even while values arrive.
  void render_histogram(std::string& out, const std::string& name, const Series& series) const {
    const std::string bucket = name + "_bucket";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < series.bucket_counts.size(); ++i) {
      cumulative += series.bucket_counts[i].load();
      std::string le = "le=\"";
      if (i < bounds.size()) {
        append_number(le, bounds[i]);
      } else {
        le += "+Inf";
      }
      le += '"';
      append_sample(out, bucket, series.labels, le, std::to_string(cumulative));
    }
    std::string sum;
    append_number(sum, static_cast<double>(series.sum_nanoseconds.load()) / 1e9);
    append_sample(out, name + "_sum", series.labels, {}, sum);
    append_sample(out, name + "_count", series.labels, {}, std::to_string(cumulative));
  }
};

std::vector<double> PrometheusMetrics::default_buckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

PrometheusMetrics::PrometheusMetrics(std::vector<double> buckets)
    : state_(std::make_unique<State>()) {
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    if (!(buckets[i] > 0) || (i > 0 && !(buckets[i] > buckets[i - 1]))) {
      throw InvalidOption("PrometheusMetrics: bucket bounds must be positive and increasing");
    }
  }
  state_->bounds = std::move(buckets);
  // avout's families render in their fixed order, the unlabelled ones from 0.
  for (const auto& family : metric_families()) {
    Family& added = state_->add_family(family.name, family.kind, family.help);
    if (family.labels.empty()) state_->add_series(added, {});
  }
}

PrometheusMetrics::~PrometheusMetrics() = default;

void PrometheusMetrics::add(std::string_view name, MetricLabels labels, std::uint64_t amount) {
  if (auto* series = state_->find(name, MetricKind::counter, labels)) {
    series->total.fetch_add(amount, std::memory_order_relaxed);
  }
}

void PrometheusMetrics::observe(std::string_view name, MetricLabels labels,
                                std::chrono::nanoseconds duration) {
  auto* series = state_->find(name, MetricKind::histogram, labels);
  if (series == nullptr) return;
  const auto nanoseconds = std::max<std::int64_t>(duration.count(), 0);
  const double seconds = static_cast<double>(nanoseconds) / 1e9;
  const auto& bounds = state_->bounds;
  // le: a value equal to a bound falls into that bound's bucket.
  const auto bucket = static_cast<std::size_t>(
      std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin());
  series->bucket_counts[bucket].fetch_add(1, std::memory_order_relaxed);
  series->sum_nanoseconds.fetch_add(static_cast<std::uint64_t>(nanoseconds),
                                    std::memory_order_relaxed);
}

void PrometheusMetrics::add_to_gauge(std::string_view name, MetricLabels labels,
                                     std::int64_t delta) {
  if (auto* series = state_->find(name, MetricKind::gauge, labels)) {
    series->gauge.fetch_add(delta, std::memory_order_relaxed);
  }
}

std::string PrometheusMetrics::render() const {
  std::string out;
  std::shared_lock lock(state_->mutex);
  for (const auto& family : state_->families) state_->render_family(out, *family);
  return out;
}

}  // namespace avout
