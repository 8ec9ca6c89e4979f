#include "runtime/session_deaths.hpp"

#include "base/callback_executor.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

namespace avout::detail {

namespace {
// A listing that failed (ZooKeeper unreachable) is tried again after this pause.
constexpr std::chrono::milliseconds relist_pause{200};
}  // namespace

SessionDeaths::SessionDeaths(ZooKeeperSession& session, std::string folder,
                             std::shared_ptr<CallbackExecutor> callbacks)
    : session_(session), folder_(std::move(folder)), callbacks_(std::move(callbacks)) {}

SessionDeaths::~SessionDeaths() {
  if (session_listener_ != 0) session_.remove_listener(session_listener_);
}

std::uint64_t SessionDeaths::add(std::function<void()> listener) {
  bool start = false;
  std::uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    id = ++next_id_;
    listeners_.emplace(id, std::move(listener));
    start = !std::exchange(started_, true);
  }
  if (start) {
    // A watch does not survive an expired session, and a death may pass unseen meanwhile.
    std::weak_ptr<SessionDeaths> weak = weak_from_this();
    session_listener_ = session_.add_listener([weak](SessionState state) {
      if (state != SessionState::connected) return;
      if (auto self = weak.lock()) self->post_list(std::chrono::milliseconds(0));
    });
    post_list(std::chrono::milliseconds(0));
  }
  return id;
}

void SessionDeaths::remove(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  listeners_.erase(id);
}

void SessionDeaths::post_list(std::chrono::milliseconds delay) {
  std::weak_ptr<SessionDeaths> weak = weak_from_this();
  // Called from ZooKeeper's threads too: only hand over.
  callbacks_->post_after(delay, [weak] {
    if (auto self = weak.lock()) self->list();
  });
}

void SessionDeaths::list() {
  std::weak_ptr<SessionDeaths> weak = weak_from_this();
  std::vector<std::string> children;
  try {
    children = session_.children(folder_, [weak](const WatchEvent&) {
      if (auto self = weak.lock()) self->post_list(std::chrono::milliseconds(0));
    });
  } catch (const Error&) {
    post_list(relist_pause);
    return;
  }
  bool someone_died = false;
  {
    std::lock_guard lock(mutex_);
    std::set<std::string> now(children.begin(), children.end());
    someone_died = std::any_of(alive_.begin(), alive_.end(),
                               [&](const std::string& child) { return !now.contains(child); });
    alive_ = std::move(now);
  }
  if (someone_died) tell();
}

void SessionDeaths::tell() {
  std::vector<std::function<void()>> listeners;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, listener] : listeners_) listeners.push_back(listener);
  }
  for (const auto& listener : listeners) listener();
}

}  // namespace avout::detail
