#include "zk/session_liveness.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <vector>

namespace avout::detail {

namespace {

// While a stall's confirming sync is out, its answer is looked at this often.
constexpr std::chrono::milliseconds confirmation_poll{5};

}  // namespace

SessionLiveness::SessionLiveness(ZooKeeperSession& session) : session_(session) {}

SessionLiveness::~SessionLiveness() {
  // The last unsubscribe (under dispatching_) came after the start; not held while removing
  // the listener, which the session calls with its own dispatch lock held.
  { std::lock_guard in_dispatch(dispatching_); }
  // After remove_listener returns the listener never runs again, so it may use `this`.
  if (listener_ != 0) session_.remove_listener(listener_);
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

std::uint64_t SessionLiveness::subscribe(LivenessSubscriber& subscriber) {
  std::call_once(started_, [this] {
    {
      std::lock_guard lock(mutex_);
      last_tick_ = std::chrono::steady_clock::now();  // no stall before the first tick
    }
    listener_ = session_.add_listener([this](SessionState state) { on_session(state); });
    thread_ = std::thread([this] { run(); });
  });
  std::lock_guard in_dispatch(dispatching_);
  const std::uint64_t id = next_id_++;
  subscribers_.emplace(id, std::make_shared<Entry>(Entry{&subscriber}));
  return id;
}

void SessionLiveness::unsubscribe(std::uint64_t id) {
  std::lock_guard in_dispatch(dispatching_);
  auto found = subscribers_.find(id);
  if (found == subscribers_.end()) return;
  found->second->active = false;
  subscribers_.erase(found);
}

bool SessionLiveness::may_hold() const {
  const auto limit = stall_limit();
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  // A gap since the last tick longer than the limit is a stall no tick has noticed yet.
  if (unconfirmed_ || now - last_tick_ > limit) return false;
  return !(lapse_at_ && now >= *lapse_at_);
}

bool SessionLiveness::lapsed() const {
  std::lock_guard lock(mutex_);
  return lapse_at_ && std::chrono::steady_clock::now() >= *lapse_at_;
}

void SessionLiveness::on_session(SessionState state) {
  // On the ZooKeeper event thread: only state changes and the subscribers' signals.
  const auto timeout = state == SessionState::disconnected ? session_.negotiated_timeout()
                                                           : std::chrono::milliseconds(0);
  std::lock_guard in_dispatch(dispatching_);
  LivenessEvent event = LivenessEvent::expired;  // expired, auth_failed: the ephemerals are gone
  {
    std::lock_guard lock(mutex_);
    if (state == SessionState::disconnected) {
      // The C client gives up on a connection after 2/3 of the negotiated timeout without a
      // reply, so the last reply came no earlier than that; the server may end the session
      // one timeout after it (less a margin for the round trip and clock rates).
      if (!lapse_at_) lapse_at_ = std::chrono::steady_clock::now() + timeout / 3 - timeout / 20;
      event = LivenessEvent::disconnected;
    } else if (state == SessionState::connected) {
      lapse_at_.reset();
      unconfirmed_ = false;  // the same session is back, or a new one (what the old held is lost)
      event = LivenessEvent::connected;
    }
    changed_.notify_all();
  }
  dispatch(event);
}

void SessionLiveness::dispatch(LivenessEvent event) {
  std::vector<std::shared_ptr<Entry>> snapshot;
  snapshot.reserve(subscribers_.size());
  for (const auto& entry : subscribers_) snapshot.push_back(entry.second);
  for (const auto& entry : snapshot) {
    if (entry->active) entry->subscriber->on_liveness(event);  // else removed by one before it
  }
}

bool SessionLiveness::confirmation_needed() {
  std::vector<std::shared_ptr<Entry>> snapshot;
  snapshot.reserve(subscribers_.size());
  for (const auto& entry : subscribers_) snapshot.push_back(entry.second);
  return std::any_of(snapshot.begin(), snapshot.end(), [](const std::shared_ptr<Entry>& entry) {
    return entry->active && entry->subscriber->needs_confirmation();
  });
}

std::chrono::milliseconds SessionLiveness::stall_limit() const {
  // The client pings after a third of the timeout without traffic; the server ends the
  // session a full timeout after it last heard from it. Half the timeout leaves a margin.
  return session_.negotiated_timeout() / 2;
}

void SessionLiveness::run() {
  // Subscribers' holds are lost once the server may have ended the session: another process
  // may hold from then on. The thread ticks so that a stall of this process is noticed.
  while (true) {
    check_stall();
    {
      // The lapse is decided and told under dispatching_, so a reconnect cannot be told
      // before a lapse decided ahead of it.
      std::lock_guard in_dispatch(dispatching_);
      bool tell = false;
      {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
        const auto now = std::chrono::steady_clock::now();
        if (lapse_at_ && lapse_at_ != lapse_told_ && now >= *lapse_at_) {
          lapse_told_ = lapse_at_;
          tell = true;
        }
      }
      if (tell) {
        dispatch(LivenessEvent::lapsed);
        continue;
      }
    }
    const auto tick = std::max(std::chrono::milliseconds(20), stall_limit() / 5);
    std::unique_lock lock(mutex_);
    if (stopping_) return;
    const auto now = std::chrono::steady_clock::now();
    auto wake_at = now + tick;
    if (lapse_at_ && lapse_at_ != lapse_told_) wake_at = std::min(wake_at, *lapse_at_);
    if (confirmation_) wake_at = std::min(wake_at, now + confirmation_poll);
    const auto seen = lapse_at_;
    changed_.wait_until(lock, wake_at, [&] { return stopping_ || lapse_at_ != seen; });
  }
}

void SessionLiveness::check_stall() {
  const auto limit = stall_limit();
  std::uint64_t stalls = 0;
  {
    std::lock_guard in_dispatch(dispatching_);
    bool stalled = false;
    bool unconfirmed = false;
    {
      std::lock_guard lock(mutex_);
      const auto now = std::chrono::steady_clock::now();
      if (now - last_tick_ > limit) {
        unconfirmed_ = true;
        ++stalls_;
        stalled = true;
      }
      last_tick_ = now;
      stalls = stalls_;
      unconfirmed = unconfirmed_;
    }
    if (!unconfirmed) {
      confirmation_.reset();
      return;
    }
    // Nothing to confirm when nobody holds (or takes a hold decided before the stall).
    if (!confirmation_needed()) {
      std::lock_guard lock(mutex_);
      unconfirmed_ = false;
      confirmation_.reset();
      return;
    }
    if (stalled) dispatch(LivenessEvent::stalled);
  }
  if (confirmation_ && confirmation_->stalls != stalls) confirmation_.reset();  // sent too early
  if (confirmation_ &&
      confirmation_->reply.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    // A sync passes through the leader, which closes an ended session's connection first:
    // an answer on the same session proves it never ended, so no one else can have held.
    bool answered = false;
    try {
      confirmation_->reply.get();
      answered = true;
    } catch (const Error&) {
    }
    const bool same_session = session_.generation() == confirmation_->generation;
    confirmation_.reset();
    if (answered && same_session) {
      std::lock_guard in_dispatch(dispatching_);
      bool tell = false;
      {
        std::lock_guard lock(mutex_);
        if (unconfirmed_ && stalls_ == stalls) {
          unconfirmed_ = false;
          tell = true;
        }
      }
      if (tell) dispatch(LivenessEvent::confirmed);
    }
    return;  // a failed sync is sent again on the next tick, not at once
  }
  const auto now = std::chrono::steady_clock::now();
  if (confirmation_ && now >= confirmation_->give_up_at) confirmation_.reset();  // no answer
  if (confirmation_) return;
  // An ended session (its renewal under way) is confirmed by the renewal's connect; a
  // request now would wait for it.
  const auto generation = session_.generation();
  if (session_.ended_since(generation)) return;
  try {
    confirmation_ = Confirmation{session_.sync_async("/"), generation, stalls,
                                 now + 2 * session_.negotiated_timeout()};
  } catch (const Error&) {
  }
}

}  // namespace avout::detail
