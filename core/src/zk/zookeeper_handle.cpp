#include "zk/zookeeper_handle.hpp"

#include "base/log.hpp"

#include <avout/errors.hpp>

#include <chrono>
#include <exception>
#include <thread>

namespace avout::detail {

namespace {

// How long the C client may go on using the addresses it resolved for the host list.
constexpr std::chrono::milliseconds host_resolution_window{30'000};

std::string connect_string(const SessionOptions& options) { return options.hosts + options.chroot; }

WatchEventType event_type(int type) {
  if (type == ZOO_CREATED_EVENT) return WatchEventType::created;
  if (type == ZOO_DELETED_EVENT) return WatchEventType::deleted;
  if (type == ZOO_CHANGED_EVENT) return WatchEventType::changed;
  if (type == ZOO_CHILD_EVENT) return WatchEventType::children_changed;
  return WatchEventType::session_lost;
}

}  // namespace

void run_callback_safely(const Logger& logger, const std::function<void()>& body,
                         const char* what) {
  run_logging_errors(logger, what, body);
}

Handle::Handle(const SessionOptions& options, StateListener on_state, const clientid_t* session)
    : on_state_(std::move(on_state)), logger_(options.logger), log_route_(options.logger) {
  // The C client's own log goes to this handle's logger: its chatter while a server is
  // down is rate-limited there, and no process-wide level or stream is touched.
  handle_ = zookeeper_init2(connect_string(options).c_str(), &Handle::on_session_event,
                            static_cast<int>(options.session_timeout.count()), session, this, 0,
                            log_route_.callback());
  if (handle_ == nullptr) {
    throw ConnectionLoss("zookeeper: cannot start a session for \"" + connect_string(options) +
                         "\" (bad host list?)");
  }
  // By default the C client resolves the host list again each time it polls its socket: a
  // getaddrinfo (a netlink socket and an address dump) before every send and after every
  // reply, on the path of every request (in this project's bench: half the client's CPU time
  // per transaction). Once per window is enough to follow DNS changes; the C client still
  // resolves again when a connection is lost (zookeeper.h, zoo_set_servers_resolution_delay).
  zoo_set_servers_resolution_delay(handle_, static_cast<int>(host_resolution_window.count()));
}

Handle::~Handle() {
  // Requests still in flight (fire-and-forget deletes, reads ahead) would never complete
  // once the handle closes, and their replies would leak: give them a moment to finish.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (in_flight_.load(std::memory_order_acquire) > 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // zookeeper_close joins the C client's threads: after it no callback runs, so the watch
  // records the server never fired can be freed with the map.
  zookeeper_close(handle_);
}

std::int64_t Handle::session_id() const { return zoo_client_id(handle_)->client_id; }

WatchRecord* Handle::add_watch(std::string path, WatchCallback callback) {
  auto record = std::make_unique<WatchRecord>(WatchRecord{std::move(callback), std::move(path)});
  WatchRecord* raw = record.get();
  std::lock_guard lock(watches_mutex_);
  watches_.emplace(raw, std::move(record));
  return raw;
}

std::unique_ptr<WatchRecord> Handle::take_watch(WatchRecord* record) {
  std::lock_guard lock(watches_mutex_);
  auto found = watches_.find(record);
  if (found == watches_.end()) return nullptr;
  auto owned = std::move(found->second);
  watches_.erase(found);
  return owned;
}

void Handle::drop_watch(WatchRecord* record) { take_watch(record); }

void Handle::on_watch_event(zhandle_t* zh, int type, int state, const char* path, void* context) {
  auto* handle = static_cast<Handle*>(const_cast<void*>(zoo_get_context(zh)));
  auto* key = static_cast<WatchRecord*>(context);
  // The C client shows every registered watcher each session event; only the end of the
  // session concerns a one-shot watch (a reconnect keeps it armed on the server).
  if (type == ZOO_SESSION_EVENT && state != ZOO_EXPIRED_SESSION_STATE &&
      state != ZOO_AUTH_FAILED_STATE) {
    return;
  }
  auto record = handle->take_watch(key);
  if (!record || !record->callback) return;
  WatchEvent event{event_type(type), path != nullptr && *path ? path : record->path};
  run_callback_safely(
      handle->logger_, [&] { record->callback(event); }, "watch callback");
}

void Handle::on_session_event(zhandle_t* zh, int type, int state, const char*, void* context) {
  if (type != ZOO_SESSION_EVENT) return;
  auto* handle =
      static_cast<Handle*>(context != nullptr ? context : const_cast<void*>(zoo_get_context(zh)));
  run_callback_safely(
      handle->logger_, [&] { handle->on_state_(state); }, "session listener");
}

}  // namespace avout::detail
