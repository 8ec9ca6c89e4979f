#pragma once
// One zhandle_t and the watch records registered on it. A Handle is one ZooKeeper session:
// when the session expires, ZooKeeperSession makes a new Handle. Closing the handle (in the
// destructor) joins the C client's threads, so a Handle is never destroyed on them.

#include "zk/zookeeper_c.hpp"
#include "zk/zookeeper_log.hpp"

#include <avout/logger.hpp>
#include <avout/zookeeper_session.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace avout::detail {

/// A one-shot watch waiting on the C client: delivered once (node event or session loss).
struct WatchRecord {
  WatchCallback callback;
  std::string path;
};

/// Receives session state changes of one handle (called on the C client's event thread).
using StateListener = std::function<void(int state)>;

class Handle {
 public:
  /// Starts connecting; does not wait. `session` resumes an existing session (tests use it
  /// to expire one); null starts a new one.
  Handle(const SessionOptions& options, StateListener on_state, const clientid_t* session);
  ~Handle();
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  zhandle_t* get() const { return handle_; }
  std::int64_t session_id() const;
  /// The ACL for nodes this handle creates: creator-only when the session carries digest
  /// credentials, open otherwise.
  const ACL_vector* create_acl() const { return create_acl_; }
  void use_creator_acl() { create_acl_ = &ZOO_CREATOR_ALL_ACL; }

  /// Registers a one-shot watch; the returned pointer is the C watcher context.
  WatchRecord* add_watch(std::string path, WatchCallback callback);
  /// Drops a record whose request failed (no watch was set on the server).
  void drop_watch(WatchRecord* record);
  /// Counts a request sent on this handle until its completion runs.
  void request_started() { in_flight_.fetch_add(1, std::memory_order_relaxed); }
  /// See request_started.
  void request_finished() { in_flight_.fetch_sub(1, std::memory_order_release); }
  /// Where this handle's messages go (the session's logger; empty: the default one).
  const Logger& logger() const { return logger_; }
  /// The C watcher for records made by add_watch.
  static void on_watch_event(zhandle_t* zh, int type, int state, const char* path, void* context);

 private:
  static void on_session_event(zhandle_t* zh, int type, int state, const char* path, void* context);
  std::unique_ptr<WatchRecord> take_watch(WatchRecord* record);

  StateListener on_state_;
  Logger logger_;
  ZooKeeperLogRoute log_route_;
  std::atomic<int> in_flight_{0};
  std::mutex watches_mutex_;
  std::unordered_map<WatchRecord*, std::unique_ptr<WatchRecord>> watches_;
  const ACL_vector* create_acl_ = &ZOO_OPEN_ACL_UNSAFE;
  zhandle_t* handle_ = nullptr;
};

/// Runs a user callback on the event thread: it must never throw into the C client. What it
/// throws is logged as an error naming `what`.
void run_callback_safely(const Logger& logger, const std::function<void()>& body, const char* what);

}  // namespace avout::detail
