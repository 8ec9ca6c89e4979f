#include "base/log.hpp"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace avout {

namespace {

using Clock = std::chrono::steady_clock;

// Keeps a flood of one kind of message (a connection refused every few hundred ms while a
// server is down) from burying everything else, in bounded memory.
class RateLimit {
 public:
  static constexpr std::size_t lines_per_window = 3;
  static constexpr auto window = std::chrono::seconds(10);
  static constexpr std::size_t max_sites = 64;

  // The line to print for `message`, or empty when it is suppressed.
  std::string admit(std::string_view message) {
    const auto now = Clock::now();
    std::lock_guard lock(mutex_);
    Site& site = site_of(kind_of(message), now);
    if (now - site.window_start >= window) {
      site.window_start = now;
      site.printed = 0;
    }
    if (site.printed >= lines_per_window) {
      ++site.suppressed;
      return {};
    }
    ++site.printed;
    std::string line(message);
    if (site.suppressed > 0) {
      line += " (" + std::to_string(site.suppressed) + " similar messages suppressed)";
      site.suppressed = 0;
    }
    return line;
  }

 private:
  struct Site {
    Clock::time_point window_start;
    std::size_t printed = 0;
    std::size_t suppressed = 0;
  };

  // Messages of one kind differ in numbers (ports, ids, counts): those do not count.
  static std::string kind_of(std::string_view message) {
    std::string kind;
    for (char c : message) {
      if (kind.size() == 48) break;
      if (std::isdigit(static_cast<unsigned char>(c)) == 0) kind += c;
    }
    return kind;
  }

  Site& site_of(const std::string& kind, Clock::time_point now) {
    if (auto found = sites_.find(kind); found != sites_.end()) return found->second;
    if (sites_.size() >= max_sites) {
      std::erase_if(sites_, [&](const auto& entry) {
        return entry.second.suppressed == 0 && now - entry.second.window_start >= window;
      });
    }
    // Still full: every further kind shares one budget.
    if (sites_.size() >= max_sites) return sites_[std::string()];
    return sites_[kind];
  }

  std::mutex mutex_;
  std::unordered_map<std::string, Site> sites_;
};

void print_default(LogLevel level, std::string_view message) {
  if (level < LogLevel::warning) return;
  // Never destroyed: the ZooKeeper client's threads may log while statics are destroyed.
  static RateLimit* const limit = new RateLimit;
  const std::string line = limit->admit(message);
  if (line.empty()) return;
  const std::string full = "avout: " + std::string(to_string(level)) + ": " + line + "\n";
  std::fwrite(full.data(), 1, full.size(), stderr);  // one write: lines do not interleave
}

}  // namespace

std::string_view to_string(LogLevel level) {
  switch (level) {
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warning: return "warning";
    case LogLevel::error: return "error";
  }
  return "unknown";
}

Logger default_logger() { return &print_default; }

namespace detail {

void log(const Logger& logger, LogLevel level, const std::string& message) noexcept {
  try {
    if (logger) {
      logger(level, message);
    } else {
      print_default(level, message);
    }
  } catch (...) {
    // A logger that fails cannot be told so; the message is lost, the caller goes on.
  }
}

}  // namespace detail

}  // namespace avout
