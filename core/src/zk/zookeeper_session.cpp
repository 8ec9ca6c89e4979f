#include "base/durations.hpp"
#include "zk/chroot.hpp"
#include "zk/request_tally.hpp"
#include "zk/session_core.hpp"
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
using detail::PersistentSubscription;
using detail::PersistentWatch;
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

}  // namespace

ZooKeeperSession::ZooKeeperSession(SessionOptions options)
    : impl_(std::make_shared<detail::SessionCore>()) {
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
  impl_->listeners.emplace(id, std::make_shared<detail::SessionCore::Listener>(
                                   detail::SessionCore::Listener{std::move(listener)}));
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
std::future<T> issue(detail::SessionCore& impl, detail::RequestKind kind, const char* operation,
                     const std::string& path, WatchCallback watch, Completion completion,
                     Call call) {
  auto handle = impl.for_request();
  auto* reply = new Reply<T>{{}, operation, path, nullptr, nullptr, handle.get()};
  handle->request_started();
  auto future = reply->promise.get_future();
  if (watch) {
    reply->handle = handle.get();
    reply->watch = handle->add_watch(path, std::move(watch));
  }
  impl.requests.fetch_add(1, std::memory_order_relaxed);
  detail::count_request(kind);
  const int rc = call(handle.get(), reply->watch, reply);
  if (rc != ZOK) completion(rc, reply);
  return future;
}

}  // namespace

std::future<NodeData> ZooKeeperSession::get_async(const std::string& path, WatchCallback watch) {
  return issue<NodeData>(
      *impl_, detail::RequestKind::get, "get", path, std::move(watch),
      [](int rc, void* r) { detail::complete_data(rc, nullptr, 0, nullptr, r); },
      [&](Handle* h, detail::WatchRecord* w, void* r) {
        return zoo_awget(h->get(), path.c_str(), w ? &Handle::on_watch_event : nullptr, w,
                         &detail::complete_data, r);
      });
}

std::future<std::optional<NodeStat>> ZooKeeperSession::exists_async(const std::string& path,
                                                                    WatchCallback watch) {
  return issue<std::optional<NodeStat>>(
      *impl_, detail::RequestKind::exists, "exists", path, std::move(watch),
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
      *impl_, detail::RequestKind::set, "set", path, {},
      [](int rc, void* r) { detail::complete_stat(rc, nullptr, r); },
      [&](Handle* h, detail::WatchRecord*, void* r) {
        return zoo_aset(h->get(), path.c_str(), chars_of(data), length_of(data), version,
                        &detail::complete_stat, r);
      });
}

std::future<std::string> ZooKeeperSession::create_async(const std::string& path, const Bytes& data,
                                                        CreateMode mode) {
  return issue<std::string>(
      *impl_, detail::RequestKind::create, "create", path, {},
      [](int rc, void* r) { detail::complete_string(rc, nullptr, r); },
      [&](Handle* h, detail::WatchRecord*, void* r) {
        return zoo_acreate(h->get(), path.c_str(), chars_of(data), length_of(data), h->create_acl(),
                           create_flags(mode), &detail::complete_string, r);
      });
}

std::future<void> ZooKeeperSession::remove_async(const std::string& path, std::int32_t version) {
  require_version_headroom(path, version, false);
  return issue<void>(
      *impl_, detail::RequestKind::remove, "delete", path, {},
      [](int rc, void* r) { detail::complete_void(rc, r); },
      [&](Handle* h, detail::WatchRecord*, void* r) {
        return zoo_adelete(h->get(), path.c_str(), version, &detail::complete_void, r);
      });
}

std::future<std::vector<std::string>> ZooKeeperSession::children_async(const std::string& path,
                                                                       WatchCallback watch) {
  return issue<std::vector<std::string>>(
      *impl_, detail::RequestKind::children, "children", path, std::move(watch),
      [](int rc, void* r) { detail::complete_strings(rc, nullptr, r); },
      [&](Handle* h, detail::WatchRecord* w, void* r) {
        return zoo_awget_children(h->get(), path.c_str(), w ? &Handle::on_watch_event : nullptr, w,
                                  &detail::complete_strings, r);
      });
}

std::future<void> ZooKeeperSession::sync_async(const std::string& path) {
  auto handle = impl_->for_request();
  auto* reply = new Reply<void>{{}, "sync", path, nullptr, nullptr, handle.get()};
  handle->request_started();
  auto synced = reply->promise.get_future();
  impl_->requests.fetch_add(1, std::memory_order_relaxed);
  detail::count_request(detail::RequestKind::sync);
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
      throw SessionExpired(
          "zookeeper multi: the session it was prepared on has ended; nothing "
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
            zoo_create_op_init(&target, path, chars_of(data), length_of(data), handle->create_acl(),
                               create_flags(operation.mode), buffer.data(),
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
  detail::count_request(detail::RequestKind::multi);
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

std::string ZooKeeperSession::create(const std::string& path, const Bytes& data, CreateMode mode) {
  auto reply = create_async(path, data, mode);
  return wait(reply);
}

void ZooKeeperSession::create_recursive(const std::string& path) {
  validate_path(path);
  if (path == "/") return;
  // The parents nearly always exist: one create. Every refused create is a transaction the
  // server logs, so trying each prefix every time would cost a write per level.
  try {
    auto reply = create_async(path, {}, CreateMode::persistent);
    wait(reply);
    return;
  } catch (const NodeExists&) {
    return;
  } catch (const NoNode&) {
  }
  // A parent is missing: create every prefix, pipelined; NodeExists on a prefix is expected.
  std::vector<std::future<std::string>> replies;
  for (std::size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
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

MultiResult ZooKeeperSession::multi(const std::vector<Operation>& operations,
                                    std::uint64_t generation) {
  auto reply = multi_async(operations, generation);
  return wait(reply);
}

void ZooKeeperSession::sync(const std::string& path) {
  auto reply = sync_async(path);
  wait(reply);
}

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
    path =
        std::visit([](const auto& operation) { return operation.path; }, operations[failed_index]);
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
