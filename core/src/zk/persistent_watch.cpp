#include "zk/persistent_watch.hpp"

#include "zk/request_tally.hpp"
#include "zk/zookeeper_c.hpp"

namespace avout::detail {

namespace {

struct PersistentArm {
  std::weak_ptr<PersistentWatch> watch;
  Handle* handle;
  WatchRecord* record;
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

}  // namespace

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
  count_request(RequestKind::rearm);
  const int rc = zoo_awexists(handle->get(), path.c_str(), &Handle::on_watch_event, record,
                              &complete_persistent_arm, context);
  if (rc != ZOK) complete_persistent_arm(rc, nullptr, context);
}

}  // namespace avout::detail
