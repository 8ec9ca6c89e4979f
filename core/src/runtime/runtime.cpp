#include "runtime/runtime.hpp"

#include "base/callback_executor.hpp"
#include "base/hex.hpp"
#include "base/unique_ids.hpp"
#include "runtime/node_cache.hpp"
#include "runtime/pending_markers.hpp"
#include "runtime/session_deaths.hpp"
#include "zk/session_liveness.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

namespace {
constexpr std::size_t cached_values = 4096;
}  // namespace

Runtime::Runtime(ZooKeeperSession& session, const ClientOptions& options,
                 std::shared_ptr<CallbackExecutor> callbacks)
    : session_(session),
      options_(options),
      layout_(options.chroot, options.root),
      callbacks_(std::move(callbacks)),
      nodes_(std::make_unique<NodeCache>(session, callbacks_)),
      markers_(std::make_unique<PendingMarkers>(session, options.logger, options.marker_grace)),
      deaths_(std::make_shared<SessionDeaths>(session, layout_.sessions(), callbacks_)),
      liveness_(std::make_unique<SessionLiveness>(session)),
      metrics_(options.metrics) {
  session_.create_recursive(layout_.stm_clock());
  session_.create_recursive(layout_.markers());
  session_.create_recursive(layout_.sessions());
  announce_session();
  // Last: nothing throws after it, so the destructor always removes it.
  if (metrics_.enabled()) {
    seen_generation_ = session_.generation();
    session_listener_ =
        session_.add_listener([this](SessionState state) { on_session_state(state); });
  }
}

Runtime::~Runtime() {
  if (session_listener_ != 0) session_.remove_listener(session_listener_);
  markers_->remove_all();
}

void Runtime::on_session_state(SessionState state) {
  SessionEvent event = SessionEvent::auth_failed;
  switch (state) {
    case SessionState::connected: {
      // The first connect may or may not reach a listener added after it: never counted.
      if (!session_down_.exchange(false)) return;
      const std::uint64_t generation = session_.generation();
      event = seen_generation_.exchange(generation) != generation ? SessionEvent::renewed
                                                                  : SessionEvent::connected;
      break;
    }
    case SessionState::disconnected:
      session_down_ = true;
      event = SessionEvent::disconnected;
      break;
    case SessionState::expired:
      session_down_ = true;
      event = SessionEvent::expired;
      break;
    case SessionState::auth_failed: break;
  }
  callbacks_->post([metrics = metrics_, event] { metrics.session_event(event); });
}

Point Runtime::new_point() {
  return Point{session_hex(session_.session_id()) + "-" + unique_uuid()};
}

void Runtime::announce_session() {
  const std::uint64_t generation = session_.generation();
  std::lock_guard lock(announce_mutex_);
  if (announced_generation_ == generation) return;
  try {
    session_.create(layout_.session(session_.session_id()), {}, CreateMode::ephemeral);
  } catch (const NodeExists&) {
  }
  announced_generation_ = generation;
}

bool Runtime::alive(std::int64_t session) {
  if (session == session_.session_id()) return true;
  // Through the node cache: a claimant seen alive once costs no round trip again until the
  // watch says its node is gone. An absent node is never cached (it may be announced later).
  auto lookup = nodes_->begin(layout_.session(session));
  try {
    (void)nodes_->finish(lookup);
    return true;
  } catch (const NoNode&) {
    return false;
  }
}

std::optional<Bytes> Runtime::fetch_value(ReferenceData& data, const Point& point) {
  {
    std::lock_guard lock(cache_mutex_);
    if (auto found = cache_.find(point.id); found != cache_.end()) return found->second;
  }
  Bytes value;
  try {
    value = data.get(point);
  } catch (const MissingPoint&) {
    return std::nullopt;
  }
  remember(point, value);
  return value;
}

bool Runtime::has_value(const Point& point) {
  std::lock_guard lock(cache_mutex_);
  return cache_.contains(point.id);
}

void Runtime::remember(const Point& point, const Bytes& value) {
  std::lock_guard lock(cache_mutex_);
  if (cache_.size() >= cached_values) cache_.clear();  // values are immutable: any subset is valid
  cache_.emplace(point.id, value);
}

}  // namespace avout::detail
