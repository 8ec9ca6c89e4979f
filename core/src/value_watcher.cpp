#include <avout/detail/atom_core.hpp>
#include <avout/detail/value_watcher.hpp>

#include <cstdio>
#include <exception>
#include <utility>
#include <vector>

namespace avout::detail {

ValueWatcher::ValueWatcher(ZooKeeperSession& session, std::string watch_path, std::string name,
                           std::function<Bytes()> read,
                           std::shared_ptr<CallbackExecutor> callbacks)
    : session_(session),
      watch_path_(std::move(watch_path)),
      name_(std::move(name)),
      read_(std::move(read)),
      callbacks_(std::move(callbacks)) {}

void ValueWatcher::add(const std::string& key, BytesWatch watch) {
  std::lock_guard lock(mutex_);
  if (!subscription_) {
    last_seen_ = read_();
    std::weak_ptr<ValueWatcher> weak = weak_from_this();
    auto callbacks = callbacks_;
    subscription_ = session_.watch_persistently(watch_path_, [weak, callbacks](const WatchEvent&) {
      // On ZooKeeper's event thread: only hand over; the read happens on the callback thread.
      callbacks->post([weak] {
        if (auto self = weak.lock()) self->on_change();
      });
    });
  }
  watches_[key] = std::move(watch);
}

void ValueWatcher::remove(const std::string& key) {
  std::shared_ptr<void> released;  // released outside the lock: it waits for a running callback
  std::lock_guard lock(mutex_);
  watches_.erase(key);
  if (watches_.empty()) released = std::move(subscription_);
}

void ValueWatcher::on_change() {
  const Bytes current = read_();
  Bytes previous;
  std::vector<BytesWatch> to_call;
  {
    std::lock_guard lock(mutex_);
    if (current == last_seen_ || !subscription_) return;
    previous = std::exchange(last_seen_, current);
    for (auto& [key, watch] : watches_) to_call.push_back(watch);
  }
  for (auto& watch : to_call) {
    try {
      watch(previous, current);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "avout: a watch on %s threw: %s\n", name_.c_str(), error.what());
    }
  }
}

}  // namespace avout::detail
