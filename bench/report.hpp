#pragma once
// The run's results as files: JSON rows, and a PNG plot drawn by gnuplot.

#include <nlohmann/json.hpp>

#include <string>

namespace avout::bench {

/// Writes `rows` (see recorded()) with the date and machine to `path`.
void write_json(const nlohmann::json& rows, const std::string& path);

/// Draws p50 latency against refs per transaction (read-write transactions, one line per
/// store) and against client processes (one line per workload measured with 1 and with N
/// processes), and avout beside each peer per workload (bars), into `path` with gnuplot.
/// Returns false (saying why) when gnuplot is missing.
bool draw_plot(const nlohmann::json& rows, const std::string& path);

}  // namespace avout::bench
