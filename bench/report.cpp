#include "report.hpp"

#include "comparison.hpp"

#include <sys/utsname.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <stdexcept>

namespace avout::bench {

void write_json(const nlohmann::json& rows, const std::string& path) {
  utsname machine{};
  uname(&machine);
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  nlohmann::json document{{"date", date},
                          {"machine", std::string(machine.nodename) + " " + machine.machine},
                          {"rows", rows}};
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << document.dump(2) << "\n";
}

bool draw_plot(const nlohmann::json& rows, const std::string& path) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    std::fprintf(stderr, "avout-bench: gnuplot is not installed; no plot drawn\n");
    return false;
  }
  // series name -> (x, p50) points
  std::map<std::string, std::map<int, double>> by_refs, by_processes;
  const std::regex refs_pattern(R"(read-write txn, k=(\d+), (\w+))");
  const std::regex processes_pattern(R"((.*), (\d+) process(es)?(, (.*))?)");
  for (const auto& row : rows) {
    const std::string workload = row.at("workload");
    const double p50 = row.at("p50_ms");
    std::smatch match;
    if (std::regex_match(workload, match, refs_pattern)) {
      by_refs[match[2]][std::stoi(match[1])] = p50;
    } else if (std::regex_match(workload, match, processes_pattern)) {
      by_processes[match[1].str() + (match[5].matched ? " " + match[5].str() : "")]
                  [std::stoi(match[2])] = p50;
    }
  }
  const auto directory = std::filesystem::temp_directory_path() / "avout-bench-plot";
  std::filesystem::create_directories(directory);
  // Two line panels side by side on top, then the two bar panels, each the full width.
  std::string script = "set terminal pngcairo size 1600,2000\nset output '" + path +
                       "'\n"
                       "set multiplot\nset grid\nset key top left\n";
  auto panel = [&](const std::map<std::string, std::map<int, double>>& series,
                   const std::string& title, const std::string& x_label, const std::string& stem,
                   const std::string& origin) {
    script += "set origin " + origin + "\nset size 0.5,0.3\nset title '" + title +
              "'\nset xlabel '" + x_label + "'\nset ylabel 'p50 latency (ms)'\nplot ";
    int index = 0;
    for (const auto& [name, points] : series) {
      if (points.size() < 2) continue;
      const auto file = directory / (stem + std::to_string(index++) + ".dat");
      std::ofstream data(file);
      for (const auto& [x, y] : points) data << x << " " << y << "\n";
      script += std::string(index > 1 ? ", " : "") + "'" + file.string() +
                "' with linespoints title '" + name + "'";
    }
    if (index == 0) script += "0 title 'no data'";
    script += "\n";
  };
  panel(by_refs, "read-write transactions", "refs per transaction", "refs", "0,0.7");
  panel(by_processes, "contention", "client processes", "processes", "0.5,0.7");
  // avout and each peer side by side, one bar each, grouped by workload (a gap between
  // workloads): avout's bars in one colour, the peers' in another.
  const auto contenders = side_by_side(rows);
  auto bars = [&](bool throughput, const std::string& title, const std::string& stem,
                  const std::string& origin) {
    const auto file = directory / (stem + ".dat");
    std::ofstream data(file);
    std::string workload;
    int x = 0, count = 0;
    for (const auto& c : contenders) {
      if (c.throughput != throughput) continue;
      if (c.workload != workload) x += workload.empty() ? 0 : 1;
      workload = c.workload;
      data << x++ << " " << c.value << " " << (c.avout ? 1 : 2) << " \"" << c.workload << ": "
           << c.who << "\"\n";
      ++count;
    }
    script += "set origin " + origin + "\nset size 1,0.35\nset title '" + title +
              "'\nset xlabel ''\nset ylabel '" +
              (throughput ? "operations per second" : "p50 latency (ms)") +
              "'\nset logscale y\nset style fill solid 0.8\nset boxwidth 0.8\nset xtics rotate by "
              "-35 font ',8'\n";
    script += count == 0 ? "plot 0 title 'no data'\n"
                         : "plot '" + file.string() +
                               "' using 1:2:3:xtic(4) with boxes lc variable notitle\n";
    script += "unset logscale y\nset xtics norotate font ''\n";
  };
  bars(false, "side by side: latency (avout purple, peers green)", "latency", "0,0.35");
  bars(true, "side by side: throughput (avout purple, peers green)", "throughput", "0,0");
  script += "unset multiplot\n";
  const auto script_file = directory / "plot.gp";
  std::ofstream(script_file) << script;
  return std::system(("gnuplot '" + script_file.string() + "'").c_str()) == 0;
}

}  // namespace avout::bench
