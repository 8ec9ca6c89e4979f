#include "zk/chroot.hpp"
#include "base/durations.hpp"
#include "zk/zookeeper_c.hpp"
#include "zk/zookeeper_errors.hpp"
#include "zk/zookeeper_expiry.hpp"
#include "zk/zookeeper_handle.hpp"
#include "zk/zookeeper_replies.hpp"

#include <avout/errors.hpp>
#include <avout/zookeeper_session.hpp>

#include <atomic>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

namespace avout {

using detail::Handle;
using detail::Reply;

namespace {

int create_flags(CreateMode mode) {
  switch (mode) {
    case CreateMode::persistent: return ZOO_PERSISTENT;
    case CreateMode::ephemeral: return ZOO_EPHEMERAL;
    case CreateMode::persistent_sequential: return ZOO_PERSISTENT_SEQUENTIAL;
    case CreateMode::ephemeral_sequential: return ZOO_EPHEMERAL_SEQUENTIAL;
  }
  return ZOO_PERSISTENT;
}

int length_of(const Bytes& data) { return static_cast<int>(data.size()); }
const char* chars_of(const Bytes& data) { return reinterpret_cast<const char*>(data.data()); }

// The C client (3.8) refuses each operation of a multi once its handle has expired, and for
// every operation after the first refused one frees a path left over from the one before:
// ours, which we free again. A handle expired, or in the handshake that may expire it, gets
// no multi; the call fails as refused before sending (a disconnected handle still queues it).
int multi_refusal(zhandle_t* handle) {
  const int state = zoo_state(handle);
  if (state < 0) return ZINVALIDSTATE;  // expired or authentication failed: for good
  return state == ZOO_ASSOCIATING_STATE ? ZCONNECTIONLOSS : ZOK;
}

// A persistent watch: a one-shot exists-watch re-armed each time it fires. The user hears
// of an event only once the re-arm is answered: whatever the callback then reads, in
// ZooKeeper or in a store elsewhere, is at least as new as any change that fires nothing.
struct PersistentWatch : std::enable_shared_from_this<PersistentWatch> {
  std::string path;
  WatchCallback callback;
  Logger logger;
  std::atomic<bool> active{true};
  std::recursive_mutex calling;  // held while the user callback runs; the owner waits on it

  // Arms on `handle`; `then` (if any) is delivered once the server has the watch.
  void arm(Handle* handle, std::optional<WatchEvent> then = std::nullopt);
  void deliver(const WatchEvent& event) {
    std::lock_guard lock(calling);
    if (!active) return;
    detail::run_callback_safely(logger, [&] { callback(event); }, "persistent watch callback");
  }
};

struct PersistentArm {
  std::weak_ptr<PersistentWatch> watch;
  Handle* handle;
  detail::WatchRecord* record;
  std::optional<WatchEvent> then;  // delivered once armed
};

void complete_persistent_arm(int rc, const Stat*, const void* data) {
  std::unique_ptr<PersistentArm> arm(static_cast<PersistentArm*>(const_cast<void*>(data)));
  auto watch = arm->watch.lock();
  if (rc == ZOK || rc == ZNONODE) {  // armed
    if (watch && arm->then) watch->deliver(*arm->then);
    return;
  }
  arm->handle->drop_watch(arm->record);
  if (!watch || !watch->active) return;
  if (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT) {
    // Not armed, and a change may have gone unseen: try again (the request waits in the
    // client until it reconnects) and tell the user to look once that arm is answered.
    watch->arm(arm->handle, arm->then.value_or(WatchEvent{WatchEventType::changed, watch->path}));
  }
  // Session gone: the renewal re-arms on the next session, and tells the user to look.
}

void PersistentWatch::arm(Handle* handle, std::optional<WatchEvent> then) {
  std::weak_ptr<PersistentWatch> weak = weak_from_this();
  auto* record = handle->add_watch(path, [weak, handle](const WatchEvent& event) {
    auto self = weak.lock();
    if (!self || !self->active) return;
    if (event.type == WatchEventType::session_lost) {
      self->deliver(event);
    } else {
      self->arm(handle, event);
    }
  });
  auto* context = new PersistentArm{weak, handle, record, std::move(then)};
  const int rc = zoo_awexists(handle->get(), path.c_str(), &Handle::on_watch_event, record,
                              &complete_persistent_arm, context);
  if (rc != ZOK) complete_persistent_arm(rc, nullptr, context);
}

// Keeps a persistent watch alive; on destruction waits for a running callback to finish.
struct PersistentSubscription {
  std::shared_ptr<PersistentWatch> watch;
  explicit PersistentSubscription(std::shared_ptr<PersistentWatch> watched)
      : watch(std::move(watched)) {}
  PersistentSubscription(const PersistentSubscription&) = delete;
  PersistentSubscription& operator=(const PersistentSubscription&) = delete;
  ~PersistentSubscription() {
    watch->active = false;
    std::lock_guard wait_for_running_callback(watch->calling);
  }
};

}  // namespace

struct detail::SessionCore {
  SessionOptions options;

  mutable std::mutex mutex;  // guards everything below up to `listeners`
  std::condition_variable changed;
  std::shared_ptr<Handle> handle;
  std::uint64_t generation = 0;  // of `handle`
  int state = 0;                 // last state of `handle`
  int candidate_state = 0;       // last state of a handle being opened (generation + 1)
  bool closing = false;
  std::thread renewer;

  // A listener stays alive while it runs even when it (or a lock handle dying inside it)
  // removes itself: dispatch calls shared copies, and `active` stops later calls.
  struct Listener {
    std::function<void(SessionState)> call;
    bool active = true;  // guarded by `dispatching`
  };
  std::recursive_mutex dispatching;  // held while listeners run
  std::map<std::uint64_t, std::shared_ptr<Listener>> listeners;
  std::uint64_t next_listener = 1;

  std::mutex persistent_mutex;
  std::vector<std::weak_ptr<PersistentWatch>> persistent;

  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> multi_operations{0};
  std::atomic<std::uint64_t> round_trips{0};

  std::shared_ptr<Handle> current() const {
    std::lock_guard lock(mutex);
    return handle;
  }

  // With `mutex` held: the session of `before` expired or was replaced.
  bool ended_since(std::uint64_t before) const {
    return generation != before || state == ZOO_EXPIRED_SESSION_STATE;
  }

  // The handle for a new request. One made after the session expired, while the renewal is
  // under way, waits for the renewed session (up to connect_timeout) instead of failing at
  // once on the dead handle: it belongs to no attempt of the old session, and callers that
  // span the two see the generation change.
  std::shared_ptr<Handle> for_request() {
    std::unique_lock lock(mutex);
    changed.wait_for(lock, options.connect_timeout,
                     [&] { return closing || state != ZOO_EXPIRED_SESSION_STATE; });
    return handle;
  }

  void dispatch(SessionState session_state) {
    std::lock_guard lock(dispatching);
    std::vector<std::shared_ptr<Listener>> snapshot;
    snapshot.reserve(listeners.size());
    for (const auto& entry : listeners) snapshot.push_back(entry.second);
    for (const auto& listener : snapshot) {
      if (!listener->active) continue;  // removed by a listener that ran before it
      detail::run_callback_safely(options.logger, [&] { listener->call(session_state); },
                                  "session listener");
    }
  }

  void on_state(std::uint64_t handle_generation, int new_state) {
    {
      std::lock_guard lock(mutex);
      if (handle_generation == generation + 1) {
        candidate_state = new_state;
        changed.notify_all();
        return;
      }
      if (handle_generation != generation) return;  // a replaced handle
      state = new_state;
      changed.notify_all();
    }
    if (new_state == ZOO_CONNECTED_STATE) dispatch(SessionState::connected);
    else if (new_state == ZOO_EXPIRED_SESSION_STATE) dispatch(SessionState::expired);
    else if (new_state == ZOO_AUTH_FAILED_STATE) dispatch(SessionState::auth_failed);
    else if (new_state == ZOO_CONNECTING_STATE) dispatch(SessionState::disconnected);
  }

  // Opens the handle of generation `handle_generation` and waits until it is connected and
  // authenticated; throws ConnectionLoss after connect_timeout.
  std::shared_ptr<Handle> open(std::uint64_t handle_generation) {
    auto opened = std::make_shared<Handle>(
        options, [this, handle_generation](int s) { on_state(handle_generation, s); }, nullptr);
    const bool is_first = handle_generation == 0;
    std::unique_lock lock(mutex);
    const bool up = changed.wait_for(lock, options.connect_timeout, [&] {
      const int s = is_first ? state : candidate_state;
      return closing || s == ZOO_CONNECTED_STATE || s == ZOO_AUTH_FAILED_STATE;
    });
    const int s = is_first ? state : candidate_state;
    lock.unlock();
    if (!up || s != ZOO_CONNECTED_STATE) {
      throw ConnectionLoss("zookeeper: no session with " + options.hosts + " within " +
                           std::to_string(options.connect_timeout.count()) + " ms");
    }
    if (options.digest) authenticate(*opened);
    return opened;
  }

  void authenticate(Handle& target) {
    auto* reply = new Reply<void>{{}, "add_auth", "", nullptr, nullptr};
    auto done = reply->promise.get_future();
    const int rc = zoo_add_auth(target.get(), "digest", options.digest->c_str(),
                                static_cast<int>(options.digest->size()),
                                &detail::complete_void, reply);
    if (rc != ZOK) detail::complete_void(rc, reply);
    if (done.wait_for(options.connect_timeout) != std::future_status::ready) {
      throw ConnectionLoss("zookeeper: no reply to add_auth within the connect timeout");
    }
    done.get();
    target.use_creator_acl();
  }

  void renew_forever() {
    std::unique_lock lock(mutex);
    while (true) {
      changed.wait(lock, [&] {
        return closing || state == ZOO_EXPIRED_SESSION_STATE;
      });
      if (closing) return;
      candidate_state = 0;
      const std::uint64_t next = generation + 1;
      lock.unlock();
      std::shared_ptr<Handle> renewed;
      try {
        renewed = open(next);
      } catch (const Error&) {
        // ZooKeeper unreachable: try again shortly (the failed handle closes here).
        lock.lock();
        changed.wait_for(lock, std::chrono::milliseconds(200), [&] { return closing; });
        continue;
      }
      lock.lock();
      if (closing) return;
      std::shared_ptr<Handle> expired = std::move(handle);
      handle = renewed;
      generation = next;
      state = ZOO_CONNECTED_STATE;
      changed.notify_all();  // requests waiting for the renewed session
      lock.unlock();
      expired.reset();  // closes the dead handle here, never on the C client's threads
      rearm_persistent_watches(*renewed);
      dispatch(SessionState::connected);
      lock.lock();
    }
  }

  // Stops the renewal thread and closes the handle (idempotent).
  void shut_down() {
    {
      std::lock_guard lock(mutex);
      closing = true;
      changed.notify_all();
    }
    if (renewer.joinable()) renewer.join();
    std::shared_ptr<Handle> closed;
    {
      std::lock_guard lock(mutex);
      closed = std::move(handle);
    }
  }

  void rearm_persistent_watches(Handle& target) {
    std::vector<std::shared_ptr<PersistentWatch>> live;
    {
      std::lock_guard lock(persistent_mutex);
      std::erase_if(persistent, [](const auto& weak) { return weak.expired(); });
      for (auto& weak : persistent) {
        if (auto watch = weak.lock(); watch && watch->active) live.push_back(std::move(watch));
      }
    }
    for (auto& watch : live) {
      // A change made while no session was up fired no watch: tell the user to look again.
      watch->arm(&target, WatchEvent{WatchEventType::changed, watch->path});
    }
  }
};

ZooKeeperSession::ZooKeeperSession(SessionOptions options) : impl_(std::make_shared<detail::SessionCore>()) {
  detail::normalize_chroot(options.hosts, options.chroot);
  detail::require_positive(options.session_timeout, "session_timeout");
  detail::require_positive(options.connect_timeout, "connect_timeout");
  impl_->options = std::move(options);
  impl_->handle = impl_->open(0);
  impl_->renewer = std::thread([impl = impl_.get()] { impl->renew_forever(); });
  if (!impl_->options.chroot.empty()) {
    try {
      if (!exists("/")) {
        throw NoNode("zookeeper: chroot " + impl_->options.chroot + " does not exist", ZNONODE,
                     impl_->options.chroot);
      }
    } catch (...) {
      impl_->shut_down();
      throw;
    }
  }
}

ZooKeeperSession::~ZooKeeperSession() { impl_->shut_down(); }

std::int64_t ZooKeeperSession::session_id() const { return impl_->current()->session_id(); }

std::uint64_t ZooKeeperSession::generation() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->generation;
}

bool ZooKeeperSession::connected() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->state == ZOO_CONNECTED_STATE;
}

bool ZooKeeperSession::ended_since(std::uint64_t generation) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->ended_since(generation);
}

const SessionOptions& ZooKeeperSession::options() const { return impl_->options; }

std::chrono::milliseconds ZooKeeperSession::negotiated_timeout() const {
  return std::chrono::milliseconds(zoo_recv_timeout(impl_->current()->get()));
}

std::uint64_t ZooKeeperSession::add_listener(std::function<void(SessionState)> listener) {
  std::lock_guard lock(impl_->dispatching);
  const std::uint64_t id = impl_->next_listener++;
  impl_->listeners.emplace(id, std::make_shared<detail::SessionCore::Listener>(detail::SessionCore::Listener{std::move(listener)}));
  return id;
}

void ZooKeeperSession::remove_listener(std::uint64_t id) {
  std::lock_guard lock(impl_->dispatching);
  auto found = impl_->listeners.find(id);
  if (found == impl_->listeners.end()) return;
  found->second->active = false;
  impl_->listeners.erase(found);
}

namespace {

// Issues one async call on the current handle; a refused call completes at once.
template <typename T, typename Call, typename Completion>
std::future<T> issue(detail::SessionCore& impl, const char* operation, const std::string& path,
                     WatchCallback watch, Completion completion, Call call) {
  auto handle = impl.for_request();
  auto* reply = new Reply<T>{{}, operation, path, nullptr, nullptr, handle.get()};
  handle->request_started();
  auto future = reply->promise.get_future();
  if (watch) {
    reply->handle = handle.get();
    reply->watch = handle->add_watch(path, std::move(watch));
  }
  impl.requests.fetch_add(1, std::memory_order_relaxed);
  const int rc = call(handle.get(), reply->watch, reply);
  if (rc != ZOK) completion(rc, reply);
  return future;
}

}  // namespace

std::future<NodeData> ZooKeeperSession::get_async(const std::string& path, WatchCallback watch) {
  return issue<NodeData>(
      *impl_, "get", path, std::move(watch),
      [](int rc, void* r) { detail::complete_data(rc, nullptr, 0, nullptr, r); },
      [&](Handle* h, detail::WatchRecord* w, void* r) {
        return zoo_awget(h->get(), path.c_str(), w ? &Handle::on_watch_event : nullptr, w,
                         &detail::complete_data, r);
      });
}

std::future<std::optional<NodeStat>> ZooKeeperSession::exists_async(const std::string& path,
                                                                    WatchCallback watch) {
  return issue<std::optional<NodeStat>>(
      *impl_, "exists", path, std::move(watch),
      [](int rc, void* r) { detail::complete_exists(rc, nullptr, r); },
      [&](Handle* h, detail::WatchRecord* w, void* r) {
        return zoo_awexists(h->get(), path.c_str(), w ? &Handle::on_watch_event : nullptr, w,
                            &detail::complete_exists, r);
      });
}

std::future<NodeStat> ZooKeeperSession::set_async(const std::string& path, const Bytes& data,
                                                  std::int32_t version) {
  require_version_headroom(path, version, true);
  return issue<NodeStat>(
      *impl_, "set", path, {}, [](int rc, void* r) { detail::complete_stat(rc, nullptr, r); },
      [&](Handle* h, detail::WatchRecord*, void* r) {
        return zoo_aset(h->get(), path.c_str(), chars_of(data), length_of(data), version,
                        &detail::complete_stat, r);
      });
}

std::future<std::string> ZooKeeperSession::create_async(const std::string& path,
                                                        const Bytes& data, CreateMode mode) {
  return issue<std::string>(
      *impl_, "create", path, {},
      [](int rc, void* r) { detail::complete_string(rc, nullptr, r); },
      [&](Handle* h, detail::WatchRecord*, void* r) {
        return zoo_acreate(h->get(), path.c_str(), chars_of(data), length_of(data),
                           h->create_acl(), create_flags(mode), &detail::complete_string, r);
      });
}

std::future<void> ZooKeeperSession::remove_async(const std::string& path, std::int32_t version) {
  require_version_headroom(path, version, false);
  return issue<void>(
      *impl_, "delete", path, {}, [](int rc, void* r) { detail::complete_void(rc, r); },
      [&](Handle* h, detail::WatchRecord*, void* r) {
        return zoo_adelete(h->get(), path.c_str(), version, &detail::complete_void, r);
      });
}

std::future<std::vector<std::string>> ZooKeeperSession::children_async(const std::string& path,
                                                                       WatchCallback watch) {
  return issue<std::vector<std::string>>(
      *impl_, "children", path, std::move(watch),
      [](int rc, void* r) { detail::complete_strings(rc, nullptr, r); },
      [&](Handle* h, detail::WatchRecord* w, void* r) {
        return zoo_awget_children(h->get(), path.c_str(),
                                  w ? &Handle::on_watch_event : nullptr, w,
                                  &detail::complete_strings, r);
      });
}

std::future<void> ZooKeeperSession::sync_async(const std::string& path) {
  auto handle = impl_->for_request();
  auto* reply = new Reply<void>{{}, "sync", path, nullptr, nullptr, handle.get()};
  handle->request_started();
  auto synced = reply->promise.get_future();
  impl_->requests.fetch_add(1, std::memory_order_relaxed);
  const int rc = zoo_async(handle->get(), path.c_str(), &detail::complete_sync, reply);
  if (rc != ZOK) detail::complete_sync(rc, nullptr, reply);
  return synced;
}

namespace {

void require_multi_headroom(const std::vector<Operation>& operations) {
  for (const auto& operation : operations) {
    std::visit(
        [](const auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (!std::is_same_v<T, op::Create>) {
            require_version_headroom(o.path, o.version, std::is_same_v<T, op::SetData>);
          }
        },
        operation);
  }
}

}  // namespace

std::future<MultiResult> ZooKeeperSession::multi_async(const std::vector<Operation>& operations) {
  require_multi_headroom(operations);
  return send_multi(impl_->current(), operations);
}

std::future<MultiResult> ZooKeeperSession::multi_async(const std::vector<Operation>& operations,
                                                       std::uint64_t generation) {
  require_multi_headroom(operations);
  std::shared_ptr<Handle> handle;
  {
    // Under the lock the renewal swaps the handle with: this handle is that generation's.
    std::lock_guard lock(impl_->mutex);
    if (impl_->ended_since(generation)) {
      throw SessionExpired("zookeeper multi: the session it was prepared on has ended; nothing "
                           "was sent");
    }
    handle = impl_->handle;
  }
  return send_multi(std::move(handle), operations);
}

std::future<MultiResult> ZooKeeperSession::send_multi(std::shared_ptr<detail::Handle> handle,
                                                      const std::vector<Operation>& operations) {
  auto reply = std::make_unique<detail::MultiReply>();
  const std::size_t count = operations.size();
  reply->operations.resize(count);
  reply->results.resize(count);
  reply->paths.reserve(count);
  reply->data.reserve(count);
  reply->created_paths.reserve(count);
  reply->stats.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    zoo_op_t& target = reply->operations[i];
    std::visit(
        [&](const auto& operation) {
          using T = std::decay_t<decltype(operation)>;
          const char* path = reply->paths.emplace_back(operation.path).c_str();
          if constexpr (std::is_same_v<T, op::Create>) {
            const Bytes& data = reply->data.emplace_back(operation.data);
            auto& buffer = reply->created_paths.emplace_back(operation.path.size() + 64, '\0');
            zoo_create_op_init(&target, path, chars_of(data), length_of(data),
                               handle->create_acl(), create_flags(operation.mode), buffer.data(),
                               static_cast<int>(buffer.size()));
          } else if constexpr (std::is_same_v<T, op::Remove>) {
            zoo_delete_op_init(&target, path, operation.version);
          } else if constexpr (std::is_same_v<T, op::SetData>) {
            const Bytes& data = reply->data.emplace_back(operation.data);
            zoo_set_op_init(&target, path, chars_of(data), length_of(data), operation.version,
                            &reply->stats[i]);
          } else {
            zoo_check_op_init(&target, path, operation.version);
          }
        },
        operations[i]);
  }
  auto future = reply->promise.get_future();
  impl_->requests.fetch_add(1, std::memory_order_relaxed);
  impl_->multi_operations.fetch_add(count, std::memory_order_relaxed);
  reply->owner = handle.get();
  handle->request_started();
  auto* raw = reply.release();
  int rc = multi_refusal(handle->get());
  if (rc == ZOK) {
    rc = zoo_amulti(handle->get(), static_cast<int>(count), raw->operations.data(),
                    raw->results.data(), &detail::complete_multi, raw);
  }
  if (rc != ZOK) detail::complete_multi(rc, raw);
  return future;
}

NodeData ZooKeeperSession::get(const std::string& path, WatchCallback watch) {
  auto reply = get_async(path, std::move(watch));
  return wait(reply);
}

std::optional<NodeStat> ZooKeeperSession::exists(const std::string& path, WatchCallback watch) {
  auto reply = exists_async(path, std::move(watch));
  return wait(reply);
}

NodeStat ZooKeeperSession::set(const std::string& path, const Bytes& data, std::int32_t version) {
  auto reply = set_async(path, data, version);
  return wait(reply);
}

std::string ZooKeeperSession::create(const std::string& path, const Bytes& data,
                                     CreateMode mode) {
  auto reply = create_async(path, data, mode);
  return wait(reply);
}

void ZooKeeperSession::create_recursive(const std::string& path) {
  validate_path(path);
  if (path == "/") return;
  // Create every prefix, pipelined; NodeExists on a prefix is the expected case.
  std::vector<std::future<std::string>> replies;
  for (std::size_t slash = path.find('/', 1); ; slash = path.find('/', slash + 1)) {
    const std::string prefix = slash == std::string::npos ? path : path.substr(0, slash);
    replies.push_back(create_async(prefix, {}, CreateMode::persistent));
    if (slash == std::string::npos) break;
  }
  for (auto& reply : replies) {
    try {
      wait(reply);
    } catch (const NodeExists&) {
    }
  }
}

void ZooKeeperSession::remove(const std::string& path, std::int32_t version) {
  auto reply = remove_async(path, version);
  wait(reply);
}

std::vector<std::string> ZooKeeperSession::children(const std::string& path, WatchCallback watch) {
  auto reply = children_async(path, std::move(watch));
  return wait(reply);
}

MultiResult ZooKeeperSession::multi(const std::vector<Operation>& operations) {
  auto reply = multi_async(operations);
  return wait(reply);
}

MultiResult ZooKeeperSession::multi(const std::vector<Operation>& operations, std::uint64_t generation) {
  auto reply = multi_async(operations, generation);
  return wait(reply);
}

void ZooKeeperSession::sync(const std::string& path) {
  auto reply = sync_async(path);
  wait(reply);
}

namespace detail {
namespace {
thread_local const Deadline* reply_deadline = nullptr;
}  // namespace

ReplyDeadline::ReplyDeadline(const Deadline& deadline) : deadline_(deadline), outer_(reply_deadline) {
  reply_deadline = &deadline_;
}

ReplyDeadline::~ReplyDeadline() { reply_deadline = outer_; }

const Deadline& ReplyDeadline::current() {
  static const Deadline unbounded;
  return reply_deadline != nullptr ? *reply_deadline : unbounded;
}
}  // namespace detail

std::chrono::milliseconds ZooKeeperSession::reply_timeout() const {
  return std::max(impl_->options.session_timeout * 2, std::chrono::milliseconds(5000));
}

void ZooKeeperSession::throw_no_reply() const {
  throw ConnectionLoss("zookeeper: no reply within " + std::to_string(reply_timeout().count()) +
                       " ms");
}

std::shared_ptr<void> ZooKeeperSession::watch_persistently(const std::string& path,
                                                           WatchCallback callback) {
  auto watch = std::make_shared<PersistentWatch>();
  watch->path = path;
  watch->callback = std::move(callback);
  watch->logger = impl_->options.logger;
  {
    std::lock_guard lock(impl_->persistent_mutex);
    impl_->persistent.push_back(watch);
  }
  watch->arm(impl_->current().get());
  return std::make_shared<PersistentSubscription>(watch);
}

SessionStatistics ZooKeeperSession::statistics() const {
  return SessionStatistics{impl_->requests.load(), impl_->multi_operations.load(),
                           impl_->round_trips.load()};
}

void ZooKeeperSession::note_round_trip() const {
  impl_->round_trips.fetch_add(1, std::memory_order_relaxed);
}

void ZooKeeperSession::expire_for_testing() {
  const std::uint64_t before = generation();
  auto ended = [&] { return impl_->ended_since(before); };  // called with impl_->mutex held
  for (int attempt = 0; attempt < 3; ++attempt) {
    detail::end_session_from_outside(impl_->current()->get(), impl_->options);
    std::unique_lock lock(impl_->mutex);
    if (impl_->changed.wait_for(lock, impl_->options.session_timeout, ended)) return;
  }
  throw Timeout("zookeeper: the session could not be expired on purpose");
}

void MultiResult::throw_if_failed(const std::vector<Operation>& operations) const {
  if (committed) return;
  std::string path;
  if (failed_index < operations.size()) {
    path = std::visit([](const auto& operation) { return operation.path; },
                      operations[failed_index]);
  }
  detail::throw_zookeeper_error(failed_code,
                                "multi (operation " + std::to_string(failed_index) + ")", path);
}

void require_version_headroom(const std::string& path, std::int32_t version, bool increments) {
  // Avout's conditions are on versions it read; only -1 means "any", so a node must never be
  // written past INT32_MAX, where ZooKeeper's next version would wrap towards -1.
  if (version < -1) {
    throw VersionLimitReached("zookeeper node " + path + ": its version " +
                              std::to_string(version) +
                              " has wrapped past 2^31 updates; conditional writes to it are "
                              "refused (give the value a new name)");
  }
  if (increments && version == std::numeric_limits<std::int32_t>::max()) {
    throw VersionLimitReached("zookeeper node " + path +
                              ": it reached ZooKeeper's last version (2^31 - 1 updates); a "
                              "further conditional write would wrap it and is refused (give the "
                              "value a new name)");
  }
}

}  // namespace avout
