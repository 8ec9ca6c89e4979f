#pragma once
// The ZooKeeper session wrapper: the one owner of the C client's handle. Every coordination
// call of avout runs through it; C result codes become avout's typed errors here.
//
// Threading contract: every member is thread safe. Completion and watch callbacks run on the
// ZooKeeper client's event thread, one at a time; they must be cheap and must not block on
// another ZooKeeper reply (they may issue async calls). A callback that throws is caught and
// reported as an error through the session's logger (SessionOptions::logger); it never
// reaches the C client.

#include <avout/bytes.hpp>
#include <avout/deadline.hpp>
#include <avout/export.hpp>
#include <avout/logger.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace avout {

/// A node's metadata as ZooKeeper reports it.
struct NodeStat {
  std::int64_t czxid = 0;            ///< zxid of the create
  std::int64_t mzxid = 0;            ///< zxid of the last data change
  std::int64_t pzxid = 0;            ///< zxid of the last child change
  std::int64_t ctime = 0;            ///< creation time, ms since epoch
  std::int64_t mtime = 0;            ///< last modification time, ms since epoch
  std::int32_t version = 0;          ///< data version
  std::int32_t cversion = 0;         ///< child list version
  std::int64_t ephemeral_owner = 0;  ///< owning session id, 0 when persistent
  std::int32_t data_length = 0;      ///< bytes of data
  std::int32_t num_children = 0;     ///< number of children
};

/// A node's data and metadata.
struct NodeData {
  Bytes data;     ///< the node's bytes
  NodeStat stat;  ///< its metadata at the time of the read
};

/// How a node is created.
enum class CreateMode { persistent, ephemeral, persistent_sequential, ephemeral_sequential };

/// The state of the session as watchers see it.
enum class SessionState {
  connected,     ///< a server accepted the session (first connect or reconnect)
  disconnected,  ///< the connection dropped; the session may still be alive
  expired,       ///< the session is gone: its ephemerals, watches and locks are lost
  auth_failed,   ///< the server refused the credentials
};

/// What a node watch saw.
enum class WatchEventType { created, deleted, changed, children_changed, session_lost };

/// One watch notification.
struct WatchEvent {
  WatchEventType type;  ///< what happened
  std::string path;     ///< the watched node
};

/// Receives watch notifications on the ZooKeeper event thread.
using WatchCallback = std::function<void(const WatchEvent&)>;

/// Operations of a `multi`: all succeed together or none is applied.
namespace op {
/// Creates a node.
struct Create {
  std::string path;                          ///< node to create
  Bytes data;                                ///< its data
  CreateMode mode = CreateMode::persistent;  ///< persistence and sequencing
};
/// Deletes a node at an exact version.
struct Remove {
  std::string path;      ///< node to delete
  std::int32_t version;  ///< required version (never -1 in avout's own commits)
};
/// Replaces a node's data at an exact version.
struct SetData {
  std::string path;      ///< node to change
  Bytes data;            ///< new data
  std::int32_t version;  ///< required version
};
/// Checks a node's version without changing it.
struct Check {
  std::string path;      ///< node to check
  std::int32_t version;  ///< required version
};
}  // namespace op

/// One operation of a multi.
using Operation = std::variant<op::Create, op::Remove, op::SetData, op::Check>;

/// The result of one operation in a successful multi.
struct OperationResult {
  std::string created_path;  ///< for Create: the actual path (with a sequence suffix)
  NodeStat stat;             ///< for SetData: the node's new metadata
};

/// The outcome of a multi that ran to a definite result.
struct AVOUT_API MultiResult {
  bool committed = false;                ///< true when every operation was applied
  std::size_t failed_index = 0;          ///< when not committed: the first failing operation
  int failed_code = 0;                   ///< when not committed: its raw ZooKeeper code
  std::vector<OperationResult> results;  ///< when committed: one per operation
  /// Throws the typed error of the failing operation (does nothing when committed).
  void throw_if_failed(const std::vector<Operation>& operations) const;
};

/// Connection settings of a session.
struct SessionOptions {
  std::string hosts = "127.0.0.1:2181";              ///< "host:port,host:port"; a "/chroot"
                                                     ///< at its end moves to `chroot`
  std::string chroot{};                              ///< e.g. "/app"; empty or "/": none.
                                                     ///< Must exist; InvalidName if `hosts`
                                                     ///< names another
  std::chrono::milliseconds session_timeout{10000};  ///< negotiated with the server; > 0
  std::chrono::milliseconds connect_timeout{10000};  ///< wait for the first connect; > 0
  std::optional<std::string> digest{};               ///< "user:password" digest credentials;
                                                     ///< when set, created nodes get a
                                                     ///< creator-only ACL
  Logger logger{};  ///< receives the session's messages and the ZooKeeper C client's log;
                    ///< empty: default_logger() (warnings and errors to stderr, rate-limited)
};

/// Counters of the requests a session sent (for benchmarks: operations per user operation).
struct SessionStatistics {
  std::uint64_t requests = 0;          ///< requests sent (a multi counts once)
  std::uint64_t multi_operations = 0;  ///< operations inside multis
  std::uint64_t round_trips = 0;       ///< waits that blocked on a reply not yet in (pipelined
                                       ///< replies already in count nothing)
};

namespace detail {
struct SessionCore;  // the session's state (zookeeper_session.cpp)
class Handle;        // one ZooKeeper handle (zookeeper_handle.hpp)

/// While alive, bounds this thread's waits for ZooKeeper replies by `deadline` too. A wait
/// it cuts short throws Timeout and leaves the request in flight: after a write, whoever
/// sent it reports the outcome as unknown. Each call that takes a deadline opens one for its
/// own waits, so a silent server cannot hold it past it; a call made inside (a swap's
/// function calling another atom) opens its own, which holds until it returns.
class AVOUT_API ReplyDeadline {
 public:
  /// Bounds this thread's waits by `deadline` until destroyed.
  explicit ReplyDeadline(const Deadline& deadline);
  ~ReplyDeadline();
  ReplyDeadline(const ReplyDeadline&) = delete;
  ReplyDeadline& operator=(const ReplyDeadline&) = delete;
  /// The deadline bounding this thread's waits now (unbounded when no scope is open).
  static const Deadline& current();
  /// True once the current deadline expired: a write sent under it has an unknown outcome.
  static bool expired() { return current().expired(); }

 private:
  Deadline deadline_;
  const Deadline* outer_;
};
}  // namespace detail

/// A ZooKeeper session that renews itself: after an expiry it opens a new session and tells
/// its listeners. A request made once the expiry is seen waits for the new session (up to
/// connect_timeout; a multi does not wait: it belongs to an attempt of the old session).
/// Calls made while no session can be had fail with ConnectionLoss or SessionExpired.
class AVOUT_API ZooKeeperSession {
 public:
  /// Connects and waits up to `connect_timeout` for the session; throws ConnectionLoss on
  /// timeout, NoNode when the chroot does not exist and InvalidDuration (nothing opened) when
  /// a timeout is not positive.
  explicit ZooKeeperSession(SessionOptions options);
  /// Closes the session (its ephemeral nodes vanish at once).
  ~ZooKeeperSession();
  ZooKeeperSession(const ZooKeeperSession&) = delete;
  ZooKeeperSession& operator=(const ZooKeeperSession&) = delete;

  /// The current session's id (changes after an expiry).
  std::int64_t session_id() const;
  /// Incremented each time a new session replaces an expired one.
  std::uint64_t generation() const;
  /// True while the handle is connected to a server.
  bool connected() const;
  /// True once the session of `generation` (see generation()) has ended: expired, its renewal
  /// under way, or replaced by a newer session.
  bool ended_since(std::uint64_t generation) const;
  /// The options this session was opened with.
  const SessionOptions& options() const;
  /// The session timeout the server granted (it may differ from the one asked for).
  std::chrono::milliseconds negotiated_timeout() const;

  /// Registers a listener of session state changes; returns an id for remove_listener.
  /// Listeners run on the ZooKeeper event thread, or on the renewal thread for `connected`
  /// after an expiry. A listener added right after construction may still receive the
  /// first connect's `connected`.
  std::uint64_t add_listener(std::function<void(SessionState)> listener);
  /// Unregisters a listener; after return it is never called again. A listener may remove
  /// itself or others while it runs.
  void remove_listener(std::uint64_t id);

  // ---- asynchronous calls: pipelined, replies in request order -------------------------
  /// Reads a node; the future throws NoNode when absent. `watch` (optional) fires once on
  /// the next change or deletion of the node.
  std::future<NodeData> get_async(const std::string& path, WatchCallback watch = {});
  /// The node's metadata, or nullopt when absent. `watch` fires on create, change or delete.
  std::future<std::optional<NodeStat>> exists_async(const std::string& path,
                                                    WatchCallback watch = {});
  /// Sets data at `version` (-1: any); gives the new metadata.
  std::future<NodeStat> set_async(const std::string& path, const Bytes& data, std::int32_t version);
  /// Creates a node; gives the created path (with a sequence suffix for sequential modes).
  std::future<std::string> create_async(const std::string& path, const Bytes& data,
                                        CreateMode mode);
  /// Deletes a node at `version` (-1: any).
  std::future<void> remove_async(const std::string& path, std::int32_t version);
  /// The names (not paths) of a node's children. `watch` fires on the next child change.
  std::future<std::vector<std::string>> children_async(const std::string& path,
                                                       WatchCallback watch = {});
  /// Runs operations atomically; the future throws only for connection-level failures
  /// (ConnectionLoss: outcome unknown; SessionExpired), never for a failing operation.
  std::future<MultiResult> multi_async(const std::vector<Operation>& operations);
  /// multi_async on the session of `generation` (see generation()) only: once that one has
  /// ended (expired, or replaced by a renewal), nothing is sent and SessionExpired is thrown
  /// at once. The check and the choice of the handle are one step, so a renewal cannot come
  /// between them: a multi naming what was written for one session never goes out on another.
  std::future<MultiResult> multi_async(const std::vector<Operation>& operations,
                                       std::uint64_t generation);
  /// Makes the connected server catch up with the leader; later reads on this session see
  /// every write committed before the sync.
  std::future<void> sync_async(const std::string& path = "/");

  // ---- synchronous calls: the async call and a bounded wait ------------------------------
  /// See get_async.
  NodeData get(const std::string& path, WatchCallback watch = {});
  /// See exists_async.
  std::optional<NodeStat> exists(const std::string& path, WatchCallback watch = {});
  /// See set_async.
  NodeStat set(const std::string& path, const Bytes& data, std::int32_t version = -1);
  /// See create_async.
  std::string create(const std::string& path, const Bytes& data,
                     CreateMode mode = CreateMode::persistent);
  /// Creates `path` and any missing parents as empty persistent nodes; no error if present.
  /// One create when the parent exists, else one pipelined create per level.
  void create_recursive(const std::string& path);
  /// See remove_async.
  void remove(const std::string& path, std::int32_t version = -1);
  /// See children_async.
  std::vector<std::string> children(const std::string& path, WatchCallback watch = {});
  /// See multi_async.
  MultiResult multi(const std::vector<Operation>& operations);
  /// See multi_async (with a generation).
  MultiResult multi(const std::vector<Operation>& operations, std::uint64_t generation);
  /// See sync_async.
  void sync(const std::string& path = "/");

  /// Waits for an async reply, bounded by twice the session timeout (the client itself
  /// reports a dead connection sooner); throws ConnectionLoss past that, and Timeout once the
  /// thread's detail::ReplyDeadline expired (the request stays in flight).
  template <typename T>
  T wait(std::future<T>& reply) const {
    await_reply(reply);
    return reply.get();
  }
  /// See wait(std::future<T>&); for a reply shared by several readers.
  template <typename T>
  T wait(const std::shared_future<T>& reply) const {
    await_reply(reply);
    return reply.get();
  }

  /// Like wait(reply), but gives up when `deadline` expires first: nullopt then, and the
  /// request stays in flight (its reply reaches nobody). A stop request is noticed within
  /// 50 ms. An unbounded deadline is wait(reply).
  template <typename T>
  std::optional<T> wait(const std::shared_future<T>& reply, const Deadline& deadline) const {
    if (!deadline.bounded()) return wait(reply);
    if (reply.wait_for(std::chrono::seconds(0)) != std::future_status::ready) note_round_trip();
    const auto no_reply_at = Deadline::Clock::now() + reply_timeout();
    while (true) {
      // A stop token is looked at between slices of the wait; a time alone needs one wait.
      auto until = std::min(deadline.time_or_far(), no_reply_at);
      if (deadline.stop_token().stop_possible()) {
        until = std::min(until, Deadline::Clock::now() + std::chrono::milliseconds(50));
      }
      if (reply.wait_until(until) == std::future_status::ready) return reply.get();
      if (deadline.expired()) return std::nullopt;
      if (Deadline::Clock::now() >= no_reply_at) throw_no_reply();
    }
  }

  /// Watches a node for as long as the returned handle lives: the callback gets every
  /// created/changed/deleted event (changes in quick succession may coalesce into one) and
  /// `session_lost` when a session expires (then the watch is re-armed on the new session).
  /// An event is passed on once the watch is armed again on the server, so whatever the
  /// callback then reads (here or in a store elsewhere) is at least as new as any change
  /// that will fire nothing.
  std::shared_ptr<void> watch_persistently(const std::string& path, WatchCallback callback);

  /// Requests sent so far.
  SessionStatistics statistics() const;

  /// Expires this session on purpose (tests and fault drills): opens a second handle on the
  /// same session id and closes it, as ZooKeeper's own tests do, until a further one finds
  /// the session gone. Returns once the expiry was seen (the renewal may still be under way;
  /// tens of milliseconds on loopback); throws Timeout when it could not be done.
  void expire_for_testing();

 private:
  // Returns once `reply` is ready; see wait(std::future<T>&).
  template <typename Future>
  void await_reply(const Future& reply) const {
    if (reply.wait_for(std::chrono::seconds(0)) == std::future_status::ready) return;
    note_round_trip();
    const Deadline& bound = detail::ReplyDeadline::current();
    const auto no_reply_at = Deadline::Clock::now() + reply_timeout();
    while (true) {
      // A stop token is looked at between slices of the wait; a time alone needs one wait.
      auto until = std::min(bound.time_or_far(), no_reply_at);
      if (bound.stop_token().stop_possible()) {
        until = std::min(until, Deadline::Clock::now() + std::chrono::milliseconds(50));
      }
      if (reply.wait_until(until) == std::future_status::ready) return;
      if (bound.expired()) bound.expire("zookeeper: waiting for a reply");
      if (Deadline::Clock::now() >= no_reply_at) throw_no_reply();
    }
  }
  std::chrono::milliseconds reply_timeout() const;
  [[noreturn]] void throw_no_reply() const;
  void note_round_trip() const;
  std::future<MultiResult> send_multi(std::shared_ptr<detail::Handle> handle,
                                      const std::vector<Operation>& operations);
  std::shared_ptr<detail::SessionCore> impl_;
};

/// Joins a parent path and a child name ("/a" + "b" = "/a/b", "/" + "b" = "/b").
AVOUT_API std::string join_path(const std::string& parent, const std::string& child);

/// Throws InvalidName unless `path` is an absolute ZooKeeper path avout accepts: starts with
/// '/', no empty, "." or ".." segments, no trailing '/', printable characters only.
AVOUT_API void validate_path(const std::string& path);

/// Throws VersionLimitReached naming `path` unless a condition on `version` is safe to send:
/// never below -1 (a version that wrapped), and never INT32_MAX for a write that `increments`
/// the version (its successor would wrap). Every versioned request of the session passes here.
AVOUT_API void require_version_headroom(const std::string& path, std::int32_t version, bool increments);

}  // namespace avout
