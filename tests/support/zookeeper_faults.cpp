// The --wrap interposers of the C client's async calls (see zookeeper_faults.hpp). Each
// wrapper asks the active plan what to do with this request; with no plan it calls the real
// function unchanged.
#include "support/zookeeper_faults.hpp"

#include "support/fault_rates_env.hpp"
#include "support/fault_streams.hpp"
#include "zk/zookeeper_expiry.hpp"

#ifndef THREADED
#define THREADED
#endif
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

extern "C" {
int __real_zoo_acreate(zhandle_t*, const char*, const char*, int, const struct ACL_vector*, int,
                       string_completion_t, const void*);
int __real_zoo_aset(zhandle_t*, const char*, const char*, int, int, stat_completion_t, const void*);
int __real_zoo_adelete(zhandle_t*, const char*, int, void_completion_t, const void*);
int __real_zoo_amulti(zhandle_t*, int, const zoo_op_t*, zoo_op_result_t*, void_completion_t,
                      const void*);
int __real_zoo_awget(zhandle_t*, const char*, watcher_fn, void*, data_completion_t, const void*);
int __real_zoo_awexists(zhandle_t*, const char*, watcher_fn, void*, stat_completion_t, const void*);
int __real_zoo_awget_children(zhandle_t*, const char*, watcher_fn, void*, strings_completion_t,
                              const void*);
int __real_zoo_async(zhandle_t*, const char*, string_completion_t, const void*);
}

namespace avout::testing {
namespace {

enum class Fault { none, reply_lost, fail_early, expire_before, expire_after, delay };

// Ends the session of `handle` from outside (core/src/zookeeper_expiry.hpp). Runs on the
// requesting thread, where the handle is surely alive; `hosts` are the handle's servers.
void expire_session(zhandle_t* handle, const std::string& hosts) {
  using std::chrono::milliseconds;
  avout::detail::end_session_from_outside(
      handle, avout::SessionOptions{.hosts = hosts,
                                    .session_timeout = milliseconds(zoo_recv_timeout(handle)),
                                    .connect_timeout = milliseconds(3000)});
}

// One request's decision; `delay` only for Fault::delay.
struct Decision {
  Fault fault = Fault::none;
  std::chrono::milliseconds delay{0};
};

// The active plan's state: its seed, rates and counts. Decisions come from the calling
// thread's stream (support/fault_streams.hpp), not from one source all threads share.
class Injector {
 public:
  Injector(std::uint64_t seed, ZooKeeperFaultRates rates, std::string hosts)
      : seed_(seed), rates_(rates), hosts_(std::move(hosts)) {}

  Decision draw(bool mutation) {
    {
      std::lock_guard lock(mutex_);
      ++counts_.requests;
      if (!enabled_) return {};
    }
    const Decision decision = decide(mutation);
    if (decision.fault == Fault::none) return decision;
    std::lock_guard lock(mutex_);
    switch (decision.fault) {
      case Fault::reply_lost: ++counts_.reply_lost, note_fault("zookeeper reply lost"); break;
      case Fault::fail_early: ++counts_.fail_early, note_fault("zookeeper failed early"); break;
      case Fault::expire_before: ++counts_.expired, note_fault("zookeeper expired before"); break;
      case Fault::expire_after: ++counts_.expired, note_fault("zookeeper expired after"); break;
      case Fault::delay: ++counts_.delayed, note_fault("zookeeper delayed"); break;
      case Fault::none: break;
    }
    return decision;
  }

  // How long to hold back one watch event (0: not at all); drawn on the completion thread.
  std::chrono::milliseconds draw_event_delay() {
    {
      std::lock_guard lock(mutex_);
      if (!enabled_ || rates_.event_delay <= 0) return std::chrono::milliseconds(0);
    }
    const double delay = draw_fault(seed_), length = draw_fault(seed_);
    if (delay >= rates_.event_delay) return std::chrono::milliseconds(0);
    std::lock_guard lock(mutex_);
    ++counts_.delayed_events;
    const auto most = std::max<long>(1, rates_.max_delay.count());
    return std::chrono::milliseconds(1 + static_cast<long>(length * static_cast<double>(most - 1)));
  }
  // Whether watches set now are to have their events delayed.
  bool delays_events() const { return rates_.event_delay > 0; }

  const std::string& hosts() const { return hosts_; }

  void enable(bool on) {
    std::lock_guard lock(mutex_);
    enabled_ = on;
  }
  ZooKeeperFaultCounts counts() {
    std::lock_guard lock(mutex_);
    return counts_;
  }

 private:
  // Every draw is made whatever the earlier ones gave, so that one decision never shifts
  // the stream of the next.
  Decision decide(bool mutation) {
    const double lost = draw_fault(seed_), early = draw_fault(seed_), expire = draw_fault(seed_),
                 before = draw_fault(seed_), delay = draw_fault(seed_), length = draw_fault(seed_);
    if (mutation && lost < rates_.reply_lost) return {Fault::reply_lost};
    if (early < rates_.fail_early) return {Fault::fail_early};
    if (mutation && expire < rates_.expire)
      return {before < 0.5 ? Fault::expire_before : Fault::expire_after};
    if (delay < rates_.delay) {
      const auto most = std::max<long>(1, rates_.max_delay.count());
      return {Fault::delay, std::chrono::milliseconds(
                                1 + static_cast<long>(length * static_cast<double>(most - 1)))};
    }
    return {};
  }

  std::mutex mutex_;
  const std::uint64_t seed_;
  const ZooKeeperFaultRates rates_;
  ZooKeeperFaultCounts counts_;
  bool enabled_ = true;
  const std::string hosts_;
};

std::mutex active_mutex;
std::shared_ptr<Injector> active;

std::shared_ptr<Injector> current() {
  std::lock_guard lock(active_mutex);
  return active;
}

// Delayed watch events: a watch set while a plan delays events is registered as
// delayed_watch with a stand-in naming the caller's watcher and context. One stand-in per
// (watcher, context), kept for the process's life, so the C client's deduplication of equal
// watchers sees the same pairs as without it.
struct WatchStandIn {
  watcher_fn watcher;
  void* context;
};
std::mutex stand_ins_mutex;
std::map<std::pair<std::uintptr_t, void*>, std::unique_ptr<WatchStandIn>> stand_ins;

void delayed_watch(zhandle_t* handle, int type, int state, const char* path, void* context) {
  const auto* stand_in = static_cast<const WatchStandIn*>(context);
  if (type != ZOO_SESSION_EVENT) {
    if (auto injector = current()) std::this_thread::sleep_for(injector->draw_event_delay());
  }
  stand_in->watcher(handle, type, state, path, stand_in->context);
}

// The watcher and context to register for (watcher, context): the stand-in while the
// active plan delays events, else the caller's own.
std::pair<watcher_fn, void*> watch_to_register(watcher_fn watcher, void* context) {
  auto injector = current();
  if (watcher == nullptr || !injector || !injector->delays_events()) return {watcher, context};
  std::lock_guard lock(stand_ins_mutex);
  auto& stand_in = stand_ins[{reinterpret_cast<std::uintptr_t>(watcher), context}];
  if (!stand_in) stand_in.reset(new WatchStandIn{watcher, context});
  return {&delayed_watch, stand_in.get()};
}

// The context of a substituted completion: the caller's own completion and data.
template <typename Completion>
struct Substitute {
  Completion completion;
  const void* data;
  std::chrono::milliseconds delay{0};  ///< decided with the request, waited on its reply
};

// Reply lost: whatever the server said, the caller hears ZCONNECTIONLOSS.
void lost_string(int, const char*, const void* context) {
  std::unique_ptr<const Substitute<string_completion_t>> s(
      static_cast<const Substitute<string_completion_t>*>(context));
  s->completion(ZCONNECTIONLOSS, nullptr, s->data);
}
void lost_stat(int, const Stat*, const void* context) {
  std::unique_ptr<const Substitute<stat_completion_t>> s(
      static_cast<const Substitute<stat_completion_t>*>(context));
  s->completion(ZCONNECTIONLOSS, nullptr, s->data);
}
void lost_void(int, const void* context) {
  std::unique_ptr<const Substitute<void_completion_t>> s(
      static_cast<const Substitute<void_completion_t>*>(context));
  s->completion(ZCONNECTIONLOSS, s->data);
}

// Delayed replies: the completion thread waits before handing the reply on, so every later
// reply of this handle waits too (ZooKeeper delivers replies in order; a test must not see
// an order the server never produces).
template <typename Completion>
std::unique_ptr<const Substitute<Completion>> wait_then_take(const void* context) {
  std::unique_ptr<const Substitute<Completion>> s(
      static_cast<const Substitute<Completion>*>(context));
  std::this_thread::sleep_for(s->delay);
  return s;
}
void delayed_string(int rc, const char* value, const void* context) {
  auto s = wait_then_take<string_completion_t>(context);
  s->completion(rc, value, s->data);
}
void delayed_stat(int rc, const Stat* stat, const void* context) {
  auto s = wait_then_take<stat_completion_t>(context);
  s->completion(rc, stat, s->data);
}
void delayed_void(int rc, const void* context) {
  auto s = wait_then_take<void_completion_t>(context);
  s->completion(rc, s->data);
}
void delayed_data(int rc, const char* value, int length, const Stat* stat, const void* context) {
  auto s = wait_then_take<data_completion_t>(context);
  s->completion(rc, value, length, stat, s->data);
}
void delayed_strings(int rc, const String_vector* strings, const void* context) {
  auto s = wait_then_take<strings_completion_t>(context);
  s->completion(rc, strings, s->data);
}

// The faults fail_next asked for, each taken by the first request it matches.
struct Targeted {
  ZooKeeperCall call;
  std::string within;
  int count;
  Fault fault;
  int after;  // matching requests still to let through first
};
std::mutex targeted_mutex;
std::vector<Targeted> targeted;

std::optional<Fault> take_targeted(ZooKeeperCall call, const std::string& path) {
  std::lock_guard lock(targeted_mutex);
  for (auto& rule : targeted) {
    if (rule.count > 0 && rule.call == call && path.find(rule.within) != std::string::npos) {
      if (rule.after > 0) {
        --rule.after;
        return std::nullopt;
      }
      --rule.count;
      return rule.fault;
    }
  }
  return std::nullopt;
}

// The common decision for one request. `real(completion, data)` sends it; `lost` and
// `delayed` are the substitutes for this completion type (lost is null for reads). `path`
// is the request's (a multi's: its ops' paths, joined), for fail_next's rules.
template <typename Completion, typename Send>
int intercept(zhandle_t* handle, ZooKeeperCall call, const std::string& path, bool mutation,
              Completion completion, const void* data, Completion lost, Completion delayed,
              Send real) {
  auto injector = current();
  Decision decision;
  if (auto forced = completion != nullptr ? take_targeted(call, path) : std::nullopt) {
    decision.fault = lost == nullptr && *forced == Fault::reply_lost ? Fault::fail_early : *forced;
  } else if (!injector || completion == nullptr) {
    return real(completion, data);
  } else {
    decision = injector->draw(mutation);
  }
  switch (decision.fault) {
    case Fault::none: return real(completion, data);
    case Fault::fail_early: return ZCONNECTIONLOSS;  // the caller completes a refused call itself
    case Fault::reply_lost: {
      auto* s = new Substitute<Completion>{completion, data};
      const int rc = real(lost, s);
      if (rc != ZOK) delete s;
      return rc;
    }
    case Fault::delay: {
      auto* s = new Substitute<Completion>{completion, data, decision.delay};
      const int rc = real(delayed, s);
      if (rc != ZOK) delete s;
      return rc;
    }
    case Fault::expire_before:
      expire_session(handle, injector->hosts());
      return real(completion, data);
    case Fault::expire_after: {
      const int rc = real(completion, data);
      expire_session(handle, injector->hosts());
      return rc;
    }
  }
  return real(completion, data);
}

// ---- Counter offsets (CounterOffset) ----

constexpr std::size_t sequence_digits = 10;

std::string child_path(const std::string& parent, const std::string& name) {
  return parent == "/" ? "/" + name : parent + "/" + name;
}

// The active offsets: how names are shown, and the real path behind each name shown. Each
// alive CounterOffset is a rule; a path takes the first rule whose `within` it contains.
class Offsets {
 public:
  struct Rule {
    const void* owner;  // the CounterOffset that made it
    std::string within;
    std::uint32_t sequence;
    std::uint32_t version;
  };
  Offsets(std::vector<Rule> rules, std::map<std::string, std::string> real_of)
      : rules_(std::move(rules)), real_of_(std::move(real_of)) {}

  const std::vector<Rule>& rules() const { return rules_; }
  std::map<std::string, std::string> real_of() {
    std::lock_guard lock(mutex_);
    return real_of_;
  }

  // True when versions of the node at `path` are shown offset.
  bool versions_of(const std::string& path) const { return version_offset(path) != 0; }
  // A version the server reported for `path`, as shown (wrapping as an int32 does).
  std::int32_t shown_version(const std::string& path, std::int32_t real) const {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(real) + version_offset(path));
  }
  // A version the caller sent, as the server knows it; -1 ("any version") stays.
  std::int32_t real_version(const std::string& path, std::int32_t shown) const {
    if (shown == -1 || !versions_of(path)) return shown;
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(shown) - version_offset(path));
  }

  // The name the child `name` of `parent` is shown with; remembered for the way back.
  std::string shown_child(const std::string& parent, const std::string& name) {
    const Rule* rule = rule_of(parent);
    if (rule == nullptr || rule->sequence == 0 || name.size() < sequence_digits) return name;
    const std::string digits = name.substr(name.size() - sequence_digits);
    if (!std::all_of(digits.begin(), digits.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
      return name;
    }
    // The server's counter is a signed 32-bit int printed with "%010d"; C++20 makes the
    // conversion of the wrapped unsigned sum to int32 modular, as Java's int arithmetic is.
    const auto shown =
        static_cast<std::int32_t>(static_cast<std::uint32_t>(std::stoul(digits)) + rule->sequence);
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, "%010d", shown);
    std::string result = name.substr(0, name.size() - sequence_digits) + suffix;
    std::lock_guard lock(mutex_);
    real_of_[child_path(parent, result)] = child_path(parent, name);
    return result;
  }

  std::string shown_path(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) return path;
    const std::string parent = slash == 0 ? "/" : path.substr(0, slash);
    return child_path(parent, shown_child(parent, path.substr(slash + 1)));
  }

  std::string real_path(const std::string& path) {
    std::lock_guard lock(mutex_);
    const auto found = real_of_.find(path);
    return found == real_of_.end() ? path : found->second;
  }

 private:
  const Rule* rule_of(const std::string& path) const {
    for (const auto& rule : rules_) {
      if (path.find(rule.within) != std::string::npos) return &rule;
    }
    return nullptr;
  }
  std::uint32_t version_offset(const std::string& path) const {
    const Rule* rule = rule_of(path);
    return rule == nullptr ? 0 : rule->version;
  }

  std::mutex mutex_;
  const std::vector<Rule> rules_;
  std::map<std::string, std::string> real_of_;  // shown path -> the server's
};

std::shared_ptr<Offsets> active_offsets;

std::shared_ptr<Offsets> current_offsets() {
  std::lock_guard lock(active_mutex);
  return active_offsets;
}

// The path to send for `path` as the caller knows it.
std::string real_path(const std::shared_ptr<Offsets>& offsets, const char* path) {
  return offsets ? offsets->real_path(path) : std::string(path);
}

bool sequential(int mode) {
  return mode == ZOO_PERSISTENT_SEQUENTIAL || mode == ZOO_EPHEMERAL_SEQUENTIAL ||
         mode == ZOO_PERSISTENT_SEQUENTIAL_WITH_TTL;
}

// The context of a completion whose reply is shown with the offsets.
template <typename Completion>
struct Shown {
  Completion completion;
  const void* data;
  std::shared_ptr<Offsets> offsets;
  std::string parent;                          // children: the listed node
  std::vector<std::pair<char*, int>> created;  // multi: the buffers of sequential creates
  std::vector<std::pair<Stat*, std::string>>
      stats;  // multi: the stats of sets shown offset, by path
};

void shown_stat(int rc, const Stat* stat, const void* context) {
  std::unique_ptr<const Shown<stat_completion_t>> s(
      static_cast<const Shown<stat_completion_t>*>(context));
  if (rc != ZOK || stat == nullptr) return s->completion(rc, stat, s->data);
  Stat shown = *stat;
  shown.version = s->offsets->shown_version(s->parent, stat->version);
  s->completion(rc, &shown, s->data);
}

void shown_data(int rc, const char* value, int length, const Stat* stat, const void* context) {
  std::unique_ptr<const Shown<data_completion_t>> s(
      static_cast<const Shown<data_completion_t>*>(context));
  if (rc != ZOK || stat == nullptr) return s->completion(rc, value, length, stat, s->data);
  Stat shown = *stat;
  shown.version = s->offsets->shown_version(s->parent, stat->version);
  s->completion(rc, value, length, &shown, s->data);
}

// A Shown context for a reply whose stat is shown offset, or null when the node's versions
// are not (the reply passes unchanged).
template <typename Completion>
Shown<Completion>* shown_versions(const std::shared_ptr<Offsets>& offsets, const std::string& path,
                                  Completion completion, const void* data) {
  if (!offsets || !offsets->versions_of(path)) return nullptr;
  return new Shown<Completion>{completion, data, offsets, path, {}, {}};
}

void shown_created(int rc, const char* value, const void* context) {
  std::unique_ptr<const Shown<string_completion_t>> s(
      static_cast<const Shown<string_completion_t>*>(context));
  if (rc != ZOK || value == nullptr) return s->completion(rc, value, s->data);
  const std::string shown = s->offsets->shown_path(value);
  s->completion(rc, shown.c_str(), s->data);
}

void shown_children(int rc, const String_vector* strings, const void* context) {
  std::unique_ptr<const Shown<strings_completion_t>> s(
      static_cast<const Shown<strings_completion_t>*>(context));
  if (rc != ZOK || strings == nullptr) return s->completion(rc, strings, s->data);
  std::vector<std::string> names;
  for (std::int32_t i = 0; i < strings->count; ++i)
    names.push_back(s->offsets->shown_child(s->parent, strings->data[i]));
  std::vector<char*> pointers;
  for (auto& name : names) pointers.push_back(name.data());
  String_vector shown{static_cast<std::int32_t>(pointers.size()), pointers.data()};
  s->completion(rc, &shown, s->data);
}

void shown_multi(int rc, const void* context) {
  std::unique_ptr<const Shown<void_completion_t>> s(
      static_cast<const Shown<void_completion_t>*>(context));
  if (rc == ZOK) {
    for (const auto& [buffer, length] : s->created) {
      const std::string shown = s->offsets->shown_path(buffer);
      if (shown.size() < static_cast<std::size_t>(length))
        std::memcpy(buffer, shown.c_str(), shown.size() + 1);
    }
    for (const auto& [stat, path] : s->stats)
      stat->version = s->offsets->shown_version(path, stat->version);
  }
  s->completion(rc, s->data);
}

// Sends through `send(completion, data)` with `completion` replaced by `substitute` (context
// `shown`) when offsets are active; the substitute's context goes when the call is refused.
template <typename Completion, typename Send>
int with_shown(Completion completion, const void* data, Shown<Completion>* shown,
               Completion substitute, Send send) {
  if (shown == nullptr || completion == nullptr) {
    delete shown;
    return send(completion, data);
  }
  const int rc = send(substitute, shown);
  if (rc != ZOK) delete shown;
  return rc;
}

}  // namespace

void fail_next(ZooKeeperCall call, std::string within, int count, bool reply_lost, int after) {
  std::lock_guard lock(targeted_mutex);
  targeted.push_back(
      {call, std::move(within), count, reply_lost ? Fault::reply_lost : Fault::fail_early, after});
}

int failures_to_come() {
  std::lock_guard lock(targeted_mutex);
  int count = 0;
  for (const auto& rule : targeted) count += rule.count;
  return count;
}

void cancel_failures() {
  std::lock_guard lock(targeted_mutex);
  targeted.clear();
}

CounterOffset::CounterOffset(std::string within, std::int64_t sequence, std::int32_t version) {
  std::lock_guard lock(active_mutex);
  auto rules = active_offsets ? active_offsets->rules() : std::vector<Offsets::Rule>{};
  rules.push_back({this, std::move(within), static_cast<std::uint32_t>(sequence),
                   static_cast<std::uint32_t>(version)});
  active_offsets = std::make_shared<Offsets>(
      std::move(rules),
      active_offsets ? active_offsets->real_of() : std::map<std::string, std::string>{});
}

CounterOffset::~CounterOffset() {
  std::lock_guard lock(active_mutex);
  auto rules = active_offsets->rules();
  std::erase_if(rules, [this](const Offsets::Rule& rule) { return rule.owner == this; });
  if (rules.empty())
    active_offsets.reset();
  else
    active_offsets = std::make_shared<Offsets>(std::move(rules), active_offsets->real_of());
}

FaultPlan::FaultPlan(std::uint64_t seed, ZooKeeperFaultRates rates, std::string hosts) {
  auto injector = std::make_shared<Injector>(seed, rates, std::move(hosts));
  std::lock_guard lock(active_mutex);
  active = std::move(injector);
}

FaultPlan::~FaultPlan() {
  std::lock_guard lock(active_mutex);
  active.reset();
}

ZooKeeperFaultCounts FaultPlan::counts() {
  auto injector = current();
  return injector ? injector->counts() : ZooKeeperFaultCounts{};
}

void FaultPlan::enable(bool on) {
  if (auto injector = current()) injector->enable(on);
}

ZooKeeperFaultRates zookeeper_fault_rates_from_env(ZooKeeperFaultRates defaults) {
  rates_from_env("AVOUT_ZK_FAULTS", {{"lost", &defaults.reply_lost},
                                     {"early", &defaults.fail_early},
                                     {"expire", &defaults.expire},
                                     {"delay", &defaults.delay},
                                     {"events", &defaults.event_delay}});
  return defaults;
}

std::string describe(const ZooKeeperFaultRates& rates) {
  std::ostringstream out;
  out << "lost=" << rates.reply_lost << ",early=" << rates.fail_early << ",expire=" << rates.expire
      << ",delay=" << rates.delay;
  if (rates.event_delay > 0) out << ",events=" << rates.event_delay;
  return out.str();
}

std::string describe(const ZooKeeperFaultCounts& counts) {
  std::ostringstream out;
  out << counts.requests << " zookeeper requests, " << counts.reply_lost << " replies lost, "
      << counts.fail_early << " failed early, " << counts.expired << " expiries, " << counts.delayed
      << " delayed";
  if (counts.delayed_events > 0) out << ", " << counts.delayed_events << " watch events delayed";
  return out.str();
}

}  // namespace avout::testing

using avout::testing::intercept;

extern "C" {

using avout::testing::current_offsets;
using avout::testing::real_path;
using avout::testing::Shown;
using avout::testing::with_shown;
using avout::testing::ZooKeeperCall;

int __wrap_zoo_acreate(zhandle_t* zh, const char* path, const char* value, int length,
                       const struct ACL_vector* acl, int mode, string_completion_t completion,
                       const void* data) {
  const auto offsets = current_offsets();
  const std::string real = real_path(offsets, path);
  auto* shown = offsets && avout::testing::sequential(mode)
                    ? new Shown<string_completion_t>{completion, data, offsets, {}, {}, {}}
                    : nullptr;
  return with_shown(
      completion, data, shown, &avout::testing::shown_created,
      [&](string_completion_t c0, const void* d0) {
        return intercept(
            zh, ZooKeeperCall::create, real, true, c0, d0, &avout::testing::lost_string,
            &avout::testing::delayed_string, [&](string_completion_t c, const void* d) {
              return __real_zoo_acreate(zh, real.c_str(), value, length, acl, mode, c, d);
            });
      });
}

int __wrap_zoo_aset(zhandle_t* zh, const char* path, const char* buffer, int length, int version,
                    stat_completion_t completion, const void* data) {
  const auto offsets = current_offsets();
  const std::string real = real_path(offsets, path);
  const int real_version = offsets ? offsets->real_version(real, version) : version;
  auto* shown = avout::testing::shown_versions(offsets, real, completion, data);
  return with_shown(completion, data, shown, &avout::testing::shown_stat,
                    [&](stat_completion_t c0, const void* d0) {
                      return intercept(zh, ZooKeeperCall::set, real, true, c0, d0,
                                       &avout::testing::lost_stat, &avout::testing::delayed_stat,
                                       [&](stat_completion_t c, const void* d) {
                                         return __real_zoo_aset(zh, real.c_str(), buffer, length,
                                                                real_version, c, d);
                                       });
                    });
}

int __wrap_zoo_adelete(zhandle_t* zh, const char* path, int version, void_completion_t completion,
                       const void* data) {
  const auto offsets = current_offsets();
  const std::string real = real_path(offsets, path);
  const int real_version = offsets ? offsets->real_version(real, version) : version;
  return intercept(zh, ZooKeeperCall::remove, real, true, completion, data,
                   &avout::testing::lost_void, &avout::testing::delayed_void,
                   [&](void_completion_t c, const void* d) {
                     return __real_zoo_adelete(zh, real.c_str(), real_version, c, d);
                   });
}

int __wrap_zoo_amulti(zhandle_t* zh, int count, const zoo_op_t* operations,
                      zoo_op_result_t* results, void_completion_t completion, const void* data) {
  const auto offsets = current_offsets();
  // The C client serializes the ops during the call: a copy with the real paths will do.
  std::vector<zoo_op_t> sent(operations, operations + count);
  std::vector<std::string> paths;
  paths.reserve(static_cast<std::size_t>(count));
  auto* shown =
      offsets ? new Shown<void_completion_t>{completion, data, offsets, {}, {}, {}} : nullptr;
  std::string joined;  // every op's path, for fail_next's rules
  for (auto& operation : sent) {
    const char*& path = operation.type == ZOO_CREATE_OP    ? operation.create_op.path
                        : operation.type == ZOO_DELETE_OP  ? operation.delete_op.path
                        : operation.type == ZOO_SETDATA_OP ? operation.set_op.path
                                                           : operation.check_op.path;
    path = paths.emplace_back(real_path(offsets, path)).c_str();
    joined += paths.back() + "\n";
    if (offsets) {
      const std::string& real = paths.back();
      if (operation.type == ZOO_DELETE_OP)
        operation.delete_op.version = offsets->real_version(real, operation.delete_op.version);
      if (operation.type == ZOO_CHECK_OP)
        operation.check_op.version = offsets->real_version(real, operation.check_op.version);
      if (operation.type == ZOO_SETDATA_OP) {
        operation.set_op.version = offsets->real_version(real, operation.set_op.version);
        if (operation.set_op.stat != nullptr && offsets->versions_of(real))
          shown->stats.emplace_back(operation.set_op.stat, real);
      }
    }
    if (shown != nullptr && operation.type == ZOO_CREATE_OP &&
        avout::testing::sequential(operation.create_op.flags) &&
        operation.create_op.buf != nullptr) {
      shown->created.emplace_back(operation.create_op.buf, operation.create_op.buflen);
    }
  }
  return with_shown(
      completion, data, shown, &avout::testing::shown_multi,
      [&](void_completion_t c0, const void* d0) {
        return intercept(zh, ZooKeeperCall::multi, joined, true, c0, d0, &avout::testing::lost_void,
                         &avout::testing::delayed_void, [&](void_completion_t c, const void* d) {
                           // An expiry injected here falls after the library's refusal of multis
                           // on expired handles (zookeeper_session.cpp, multi_refusal): the C
                           // client would free stale paths. Make it an expiry before that check
                           // instead.
                           const int state = zoo_state(zh);
                           if (state < 0) return static_cast<int>(ZINVALIDSTATE);
                           if (state == ZOO_ASSOCIATING_STATE)
                             return static_cast<int>(ZCONNECTIONLOSS);
                           return __real_zoo_amulti(zh, count, sent.data(), results, c, d);
                         });
      });
}

int __wrap_zoo_awget(zhandle_t* zh, const char* path, watcher_fn watcher, void* context,
                     data_completion_t completion, const void* data) {
  const auto offsets = current_offsets();
  const std::string real = real_path(offsets, path);
  auto* shown = avout::testing::shown_versions(offsets, real, completion, data);
  return with_shown(completion, data, shown, &avout::testing::shown_data,
                    [&](data_completion_t c0, const void* d0) {
                      return intercept(
                          zh, ZooKeeperCall::get, real, false, c0, d0, data_completion_t{nullptr},
                          &avout::testing::delayed_data, [&](data_completion_t c, const void* d) {
                            const auto [w, x] = avout::testing::watch_to_register(watcher, context);
                            return __real_zoo_awget(zh, real.c_str(), w, x, c, d);
                          });
                    });
}

int __wrap_zoo_awexists(zhandle_t* zh, const char* path, watcher_fn watcher, void* context,
                        stat_completion_t completion, const void* data) {
  const auto offsets = current_offsets();
  const std::string real = real_path(offsets, path);
  auto* shown = avout::testing::shown_versions(offsets, real, completion, data);
  return with_shown(
      completion, data, shown, &avout::testing::shown_stat,
      [&](stat_completion_t c0, const void* d0) {
        return intercept(zh, ZooKeeperCall::exists, real, false, c0, d0, stat_completion_t{nullptr},
                         &avout::testing::delayed_stat, [&](stat_completion_t c, const void* d) {
                           const auto [w, x] = avout::testing::watch_to_register(watcher, context);
                           return __real_zoo_awexists(zh, real.c_str(), w, x, c, d);
                         });
      });
}

int __wrap_zoo_awget_children(zhandle_t* zh, const char* path, watcher_fn watcher, void* context,
                              strings_completion_t completion, const void* data) {
  const auto offsets = current_offsets();
  const std::string real = real_path(offsets, path);
  auto* shown =
      offsets ? new Shown<strings_completion_t>{completion, data, offsets, real, {}, {}} : nullptr;
  return with_shown(completion, data, shown, &avout::testing::shown_children,
                    [&](strings_completion_t c0, const void* d0) {
                      return intercept(
                          zh, ZooKeeperCall::children, real, false, c0, d0,
                          strings_completion_t{nullptr}, &avout::testing::delayed_strings,
                          [&](strings_completion_t c, const void* d) {
                            const auto [w, x] = avout::testing::watch_to_register(watcher, context);
                            return __real_zoo_awget_children(zh, real.c_str(), w, x, c, d);
                          });
                    });
}

int __wrap_zoo_async(zhandle_t* zh, const char* path, string_completion_t completion,
                     const void* data) {
  const std::string real = real_path(current_offsets(), path);
  return intercept(zh, ZooKeeperCall::sync, real, false, completion, data,
                   string_completion_t{nullptr}, &avout::testing::delayed_string,
                   [&](string_completion_t c, const void* d) {
                     return __real_zoo_async(zh, real.c_str(), c, d);
                   });
}

}  // extern "C"
