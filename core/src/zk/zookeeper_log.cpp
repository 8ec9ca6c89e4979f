#include "zk/zookeeper_log.hpp"

#include "base/log.hpp"

#include <array>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace avout::detail {

namespace {

// More handles than this alive at once in one process share the default logger.
constexpr std::size_t slot_count = 256;
constexpr std::size_t unrouted = slot_count;

struct Slot {
  bool used = false;
  Logger logger;
};

// Never destroyed, and made on first use: a handle may be opened during another file's static
// initialization or still log while the process's statics are being destroyed.
struct Slots {
  std::mutex mutex;
  std::array<Slot, slot_count> all;
};
Slots& slots() {
  static Slots* made = new Slots;
  return *made;
}

LogLevel level_of(std::string_view name) {
  if (name == "ZOO_ERROR") return LogLevel::error;
  if (name == "ZOO_WARN") return LogLevel::warning;
  if (name == "ZOO_INFO") return LogLevel::info;
  return LogLevel::debug;
}

// The C client's line is "<time>:<pid>(0x<thread>):ZOO_ERROR@<function>@<line>: <text>":
// the level comes from it; time, pid and thread are the logger's business.
void deliver(const Logger& logger, const char* line) {
  const std::string_view full(line != nullptr ? line : "");
  LogLevel level = LogLevel::warning;
  std::string_view text = full;
  if (const auto tag = full.find(":ZOO_"); tag != std::string_view::npos) {
    const auto at = full.find('@', tag);
    const auto body = full.find(": ", tag + 1);
    if (at != std::string_view::npos && body != std::string_view::npos && at < body) {
      level = level_of(full.substr(tag + 1, at - tag - 1));
      text = full.substr(body + 2);
    }
  }
  log(logger, level, "zookeeper client: " + std::string(text));
}

// Only the slot's owner writes its logger, before zookeeper_init2 starts the threads that
// call this and after zookeeper_close joined them: reading it needs no lock.
template <std::size_t Index>
void route(const char* line) {
  deliver(slots().all[Index].logger, line);
}

void route_unrouted(const char* line) { deliver(Logger{}, line); }

template <std::size_t... Index>
constexpr std::array<log_callback_fn, sizeof...(Index)> make_routes(std::index_sequence<Index...>) {
  return {&route<Index>...};
}

constexpr auto routes = make_routes(std::make_index_sequence<slot_count>{});

}  // namespace

ZooKeeperLogRoute::ZooKeeperLogRoute(Logger logger) : slot_(unrouted) {
  auto& [mutex, all] = slots();
  std::lock_guard lock(mutex);
  for (std::size_t index = 0; index < slot_count; ++index) {
    if (!all[index].used) {
      all[index].used = true;
      all[index].logger = std::move(logger);
      slot_ = index;
      return;
    }
  }
}

ZooKeeperLogRoute::~ZooKeeperLogRoute() {
  if (slot_ == unrouted) return;
  auto& [mutex, all] = slots();
  std::lock_guard lock(mutex);
  all[slot_].logger = nullptr;
  all[slot_].used = false;
}

log_callback_fn ZooKeeperLogRoute::callback() const {
  return slot_ == unrouted ? &route_unrouted : routes[slot_];
}

}  // namespace avout::detail
