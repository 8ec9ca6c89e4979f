// PrometheusMetrics' rendering without a server: the text format (HELP and TYPE once per
// family, escaped label values, cumulative buckets ending in +Inf == _count), and the recorder
// that records nothing without a sink.
#include "runtime/metrics_recorder.hpp"
#include "support/prometheus_text.hpp"

#include <avout/errors.hpp>
#include <avout/metrics.hpp>

#include <doctest/doctest.h>

#include <array>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using avout::MetricLabel;
using avout::PrometheusMetrics;
using avout::testing::parse_prometheus;

TEST_CASE("a new sink renders every family of avout once, unlabelled counters at zero") {
  PrometheusMetrics metrics;
  const auto text = metrics.render();
  const auto parsed = parse_prometheus(text);  // throws on a second HELP or TYPE
  for (const auto& family : avout::metric_families()) {
    CAPTURE(family.name);
    CHECK(parsed.help.contains(std::string(family.name)));
    CHECK(parsed.type.contains(std::string(family.name)));
  }
  CHECK(parsed.type.at("avout_commits_total") == "counter");
  CHECK(parsed.type.at("avout_commit_duration_seconds") == "histogram");
  CHECK(parsed.type.at("avout_agent_queue_length") == "gauge");
  CHECK(parsed.value("avout_commits_total") == 0);
  CHECK(parsed.value("avout_commit_duration_seconds_count") == 0);
  CHECK(parsed.value("avout_commit_duration_seconds_bucket", {{"le", "+Inf"}}) == 0);
  CHECK(text.ends_with("\n"));
}

TEST_CASE("counter names of avout end in _total and every family is named avout_") {
  for (const auto& family : avout::metric_families()) {
    CAPTURE(family.name);
    CHECK(family.name.starts_with("avout_"));
    CHECK(family.name.ends_with("_total") == (family.kind == avout::MetricKind::counter));
  }
}

TEST_CASE("counters add up per label set") {
  PrometheusMetrics metrics;
  const std::array<MetricLabel, 1> conflict{{{"cause", "conflict"}}};
  const std::array<MetricLabel, 1> miss{{{"cause", "history_miss"}}};
  metrics.add("avout_transaction_retries_total", conflict, 2);
  metrics.add("avout_transaction_retries_total", conflict, 3);
  metrics.add("avout_transaction_retries_total", miss, 1);
  metrics.add("avout_commits_total", {}, 7);
  const auto parsed = parse_prometheus(metrics.render());
  CHECK(parsed.value("avout_transaction_retries_total", {{"cause", "conflict"}}) == 5);
  CHECK(parsed.value("avout_transaction_retries_total", {{"cause", "history_miss"}}) == 1);
  CHECK(parsed.value("avout_commits_total") == 7);
}

TEST_CASE("label values escape backslash, double quote and line feed") {
  PrometheusMetrics metrics;
  const std::string odd = "a\\b\"c\nd";
  const std::array<MetricLabel, 1> agent{{{"agent", odd}}};
  metrics.add_to_gauge("avout_agent_queue_length", agent, 3);
  const auto text = metrics.render();
  CHECK(text.find(R"(avout_agent_queue_length{agent="a\\b\"c\nd"} 3)") != std::string::npos);
  CHECK(parse_prometheus(text).value("avout_agent_queue_length", {{"agent", odd}}) == 3);
}

TEST_CASE("gauges move by deltas and may come back to zero") {
  PrometheusMetrics metrics;
  const std::array<MetricLabel, 1> agent{{{"agent", "/a"}}};
  metrics.add_to_gauge("avout_agent_queue_length", agent, 2);
  metrics.add_to_gauge("avout_agent_queue_length", agent, -1);
  CHECK(parse_prometheus(metrics.render()).value("avout_agent_queue_length", {{"agent", "/a"}}) ==
        1);
  metrics.add_to_gauge("avout_agent_queue_length", agent, -1);
  CHECK(parse_prometheus(metrics.render()).value("avout_agent_queue_length", {{"agent", "/a"}}) ==
        0);
}

TEST_CASE("histogram buckets are cumulative and the +Inf bucket equals the count") {
  PrometheusMetrics metrics({0.001, 0.01, 1});
  const std::array<MetricLabel, 1> mutex{{{"kind", "mutex"}}};
  for (std::chrono::nanoseconds d : {300us, 1000us, 2000us, 2000us, 20000000us}) {
    metrics.observe("avout_lock_wait_seconds", mutex, d);
  }
  const auto parsed = parse_prometheus(metrics.render());
  auto bucket = [&](const char* le) {
    return parsed.value("avout_lock_wait_seconds_bucket", {{"kind", "mutex"}, {"le", le}});
  };
  CHECK(bucket("0.001") == 2);  // le: a value equal to the bound is inside
  CHECK(bucket("0.01") == 4);
  CHECK(bucket("1") == 4);
  CHECK(bucket("+Inf") == 5);
  CHECK(parsed.value("avout_lock_wait_seconds_count", {{"kind", "mutex"}}) == 5);
  CHECK(parsed.value("avout_lock_wait_seconds_sum", {{"kind", "mutex"}}) ==
        doctest::Approx(20.0053).epsilon(1e-9));
}

TEST_CASE("a name recorded with another kind than its family's is ignored") {
  PrometheusMetrics metrics;
  metrics.observe("avout_commits_total", {}, 1ms);
  metrics.add_to_gauge("avout_commits_total", {}, 4);
  const auto parsed = parse_prometheus(metrics.render());
  CHECK(parsed.value("avout_commits_total") == 0);
  CHECK(!parsed.value("avout_commits_total_count"));
}

TEST_CASE("a name avout does not know is rendered with a TYPE line and no HELP") {
  PrometheusMetrics metrics;
  metrics.add("my_events_total", {}, 2);
  const auto parsed = parse_prometheus(metrics.render());
  CHECK(parsed.type.at("my_events_total") == "counter");
  CHECK(!parsed.help.contains("my_events_total"));
  CHECK(parsed.value("my_events_total") == 2);
}

TEST_CASE("bucket bounds must be positive and increasing") {
  CHECK_THROWS_AS(PrometheusMetrics({0.1, 0.1}), avout::InvalidOption);
  CHECK_THROWS_AS(PrometheusMetrics({0, 1}), avout::InvalidOption);
  CHECK_NOTHROW(PrometheusMetrics(std::vector<double>{}));
}

TEST_CASE("counters recorded by several threads at once add up exactly") {
  PrometheusMetrics metrics;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::string cause = t % 2 ? "conflict" : "history_miss";
      const std::array<MetricLabel, 1> labels{{{"cause", cause}}};
      for (int i = 0; i < 1000; ++i) {
        metrics.add("avout_transaction_retries_total", labels, 1);
        metrics.observe("avout_commit_duration_seconds", {}, 1ms);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const auto parsed = parse_prometheus(metrics.render());
  CHECK(parsed.sum("avout_transaction_retries_total") == 4000);
  CHECK(parsed.value("avout_commit_duration_seconds_count") == 4000);
}

TEST_CASE("a recorder without a sink records nothing and reads no clock") {
  const avout::detail::MetricsRecorder recorder;
  CHECK(!recorder.enabled());
  CHECK(recorder.start() == avout::detail::MetricsRecorder::Clock::time_point{});
  recorder.attempt();  // no sink to reach: nothing happens
  recorder.session_event(avout::detail::SessionEvent::expired);
}

TEST_CASE("the recorder spells avout's names: a retry for a barging yield is a yield too") {
  auto sink = std::make_shared<PrometheusMetrics>();
  const avout::detail::MetricsRecorder recorder(sink);
  recorder.attempt();
  recorder.retry(avout::detail::RetryCause::barging_yield);
  recorder.lock_waited(avout::detail::LockKind::read, recorder.start(), true);
  recorder.lock_waited(avout::detail::LockKind::write, recorder.start(), false);
  recorder.session_event(avout::detail::SessionEvent::renewed);
  const auto parsed = parse_prometheus(sink->render());
  CHECK(parsed.value("avout_transaction_attempts_total") == 1);
  CHECK(parsed.value("avout_transaction_retries_total", {{"cause", "barging_yield"}}) == 1);
  CHECK(parsed.value("avout_barging_yields_total") == 1);
  CHECK(parsed.value("avout_lock_wait_seconds_count", {{"kind", "read"}}) == 1);
  CHECK(parsed.value("avout_lock_timeouts_total", {{"kind", "write"}}) == 1);
  CHECK(parsed.value("avout_session_events_total", {{"event", "renewed"}}) == 1);
}

TEST_CASE("docs/metrics.md's table lists exactly metric_families(), in order") {
  std::ifstream page(AVOUT_DOCS_DIR "/metrics.md");
  REQUIRE(page);
  std::vector<std::string> rows;  // "name kind labels" of each table row naming a metric
  std::string line;
  while (std::getline(page, line)) {
    if (!line.starts_with("| `avout_")) continue;
    std::vector<std::string> cells;
    std::stringstream cells_of(line.substr(1));
    std::string cell;
    while (std::getline(cells_of, cell, '|')) {
      std::erase(cell, '`');
      std::erase(cell, ' ');
      cells.push_back(cell);
    }
    REQUIRE(cells.size() >= 3);
    rows.push_back(cells[0] + " " + cells[1] + " " + cells[2]);
  }
  std::vector<std::string> expected;
  for (const auto& family : avout::metric_families()) {
    const char* kind = family.kind == avout::MetricKind::counter ? "counter"
                       : family.kind == avout::MetricKind::gauge ? "gauge"
                                                                 : "histogram";
    std::string labels;
    for (const auto& label : family.labels)
      labels += (labels.empty() ? "" : ",") + std::string(label);
    expected.push_back(std::string(family.name) + " " + kind + " " + labels);
  }
  CHECK(rows == expected);
}
