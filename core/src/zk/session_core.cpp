#include "zk/session_core.hpp"

#include "zk/zookeeper_replies.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

std::shared_ptr<Handle> SessionCore::for_request() {
  std::unique_lock lock(mutex);
  changed.wait_for(lock, options.connect_timeout,
                   [&] { return closing || state != ZOO_EXPIRED_SESSION_STATE; });
  return handle;
}

void SessionCore::dispatch(SessionState session_state) {
  std::lock_guard lock(dispatching);
  std::vector<std::shared_ptr<Listener>> snapshot;
  snapshot.reserve(listeners.size());
  for (const auto& entry : listeners) snapshot.push_back(entry.second);
  for (const auto& listener : snapshot) {
    if (!listener->active) continue;  // removed by a listener that ran before it
    run_callback_safely(
        options.logger, [&] { listener->call(session_state); }, "session listener");
  }
}

void SessionCore::on_state(std::uint64_t handle_generation, int new_state) {
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
  if (new_state == ZOO_CONNECTED_STATE)
    dispatch(SessionState::connected);
  else if (new_state == ZOO_EXPIRED_SESSION_STATE)
    dispatch(SessionState::expired);
  else if (new_state == ZOO_AUTH_FAILED_STATE)
    dispatch(SessionState::auth_failed);
  else if (new_state == ZOO_CONNECTING_STATE)
    dispatch(SessionState::disconnected);
}

std::shared_ptr<Handle> SessionCore::open(std::uint64_t handle_generation) {
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

void SessionCore::authenticate(Handle& target) {
  auto* reply = new Reply<void>{{}, "add_auth", "", nullptr, nullptr};
  auto done = reply->promise.get_future();
  const int rc = zoo_add_auth(target.get(), "digest", options.digest->c_str(),
                              static_cast<int>(options.digest->size()), &complete_void, reply);
  if (rc != ZOK) complete_void(rc, reply);
  if (done.wait_for(options.connect_timeout) != std::future_status::ready) {
    throw ConnectionLoss("zookeeper: no reply to add_auth within the connect timeout");
  }
  done.get();
  target.use_creator_acl();
}

void SessionCore::renew_forever() {
  std::unique_lock lock(mutex);
  while (true) {
    changed.wait(lock, [&] { return closing || state == ZOO_EXPIRED_SESSION_STATE; });
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

void SessionCore::shut_down() {
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

void SessionCore::rearm_persistent_watches(Handle& target) {
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

}  // namespace avout::detail
