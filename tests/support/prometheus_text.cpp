#include "support/prometheus_text.hpp"

#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

namespace avout::testing {

namespace {

[[noreturn]] void fail(std::size_t line, const std::string& why) {
  throw std::runtime_error("prometheus text line " + std::to_string(line) + ": " + why);
}

bool name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}

std::string read_name(const std::string& text, std::size_t& at, std::size_t line) {
  const std::size_t begin = at;
  while (at < text.size() && name_char(text[at], at == begin)) ++at;
  if (at == begin) fail(line, "a name expected at column " + std::to_string(begin));
  return text.substr(begin, at - begin);
}

// A quoted label value from `at` (on the opening quote), unescaped.
std::string read_quoted(const std::string& text, std::size_t& at, std::size_t line) {
  if (at >= text.size() || text[at] != '"') fail(line, "a quoted label value expected");
  std::string value;
  for (++at; at < text.size() && text[at] != '"'; ++at) {
    if (text[at] != '\\') {
      value += text[at];
      continue;
    }
    if (++at >= text.size()) break;
    if (text[at] == 'n') {
      value += '\n';
    } else if (text[at] == '\\' || text[at] == '"') {
      value += text[at];
    } else {
      fail(line, "an unknown escape in a label value");
    }
  }
  if (at >= text.size()) fail(line, "an unterminated label value");
  ++at;
  return value;
}

std::string unescape_help(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      ++i;
      out += text[i] == 'n' ? '\n' : text[i];
    } else {
      out += text[i];
    }
  }
  return out;
}

double read_value(const std::string& text, std::size_t line) {
  if (text == "+Inf") return std::numeric_limits<double>::infinity();
  if (text == "-Inf") return -std::numeric_limits<double>::infinity();
  if (text == "NaN") return std::nan("");
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    fail(line, "a bad value '" + text + "'");
  }
  if (used != text.size()) fail(line, "a bad value '" + text + "'");
  return value;
}

// The family a sample belongs to: its name, or without a histogram's suffix when that names
// a declared histogram.
std::string family_of(const std::string& name, const std::map<std::string, std::string>& type) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      const std::string base = name.substr(0, name.size() - s.size());
      auto found = type.find(base);
      if (found != type.end() && found->second == "histogram") return base;
    }
  }
  return name;
}

}  // namespace

std::optional<double> PrometheusText::value(
    const std::string& name, const std::map<std::string, std::string>& labels) const {
  for (const auto& sample : samples) {
    if (sample.name == name && sample.labels == labels) return sample.value;
  }
  return std::nullopt;
}

double PrometheusText::sum(const std::string& name) const {
  double total = 0;
  for (const auto& sample : samples) {
    if (sample.name == name) total += sample.value;
  }
  return total;
}

PrometheusText parse_prometheus(const std::string& text) {
  PrometheusText parsed;
  std::set<std::string> sampled;  // families whose samples began (a TYPE after them is late)
  std::istringstream lines(text);
  std::string line;
  std::size_t number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream words(line);
      std::string hash, keyword, name;
      words >> hash >> keyword >> name;
      if (keyword != "HELP" && keyword != "TYPE") continue;  // a plain comment
      if (name.empty()) fail(number, keyword + " without a metric name");
      std::string rest;
      std::getline(words, rest);
      if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
      auto& table = keyword == "HELP" ? parsed.help : parsed.type;
      if (table.contains(name)) fail(number, "a second " + keyword + " line for " + name);
      if (keyword == "TYPE") {
        if (sampled.contains(name)) fail(number, "TYPE of " + name + " after its samples");
        static const std::set<std::string> types{"counter", "gauge", "histogram", "summary",
                                                 "untyped"};
        if (!types.contains(rest)) fail(number, "an unknown type '" + rest + "'");
      }
      table[name] = keyword == "HELP" ? unescape_help(rest) : rest;
      continue;
    }
    PrometheusSample sample;
    std::size_t at = 0;
    sample.name = read_name(line, at, number);
    if (at < line.size() && line[at] == '{') {
      ++at;
      while (at < line.size() && line[at] != '}') {
        const std::string label = read_name(line, at, number);
        if (at >= line.size() || line[at] != '=') fail(number, "'=' expected after " + label);
        ++at;
        if (sample.labels.contains(label)) fail(number, "label " + label + " twice");
        sample.labels[label] = read_quoted(line, at, number);
        if (at < line.size() && line[at] == ',') ++at;
      }
      if (at >= line.size()) fail(number, "an unterminated label set");
      ++at;
    }
    if (at >= line.size() || line[at] != ' ') fail(number, "a space before the value expected");
    std::string value = line.substr(at + 1);
    if (auto space = value.find(' '); space != std::string::npos) value.resize(space);  // timestamp
    sample.value = read_value(value, number);
    sampled.insert(family_of(sample.name, parsed.type));
    parsed.samples.push_back(std::move(sample));
  }
  return parsed;
}

}  // namespace avout::testing
