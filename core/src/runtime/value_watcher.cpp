#include "runtime/value_watcher.hpp"
#include "base/callback_executor.hpp"

#include "base/log.hpp"
#include "runtime/session_deaths.hpp"

#include <avout/errors.hpp>

#include <chrono>
#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace avout::detail {

ValueWatcher::ValueWatcher(ZooKeeperSession& session, std::string watch_path, std::string name,
                           std::function<Bytes()> read, std::shared_ptr<CallbackExecutor> callbacks,
                           std::shared_ptr<SessionDeaths> deaths)
    : session_(session),
      watch_path_(std::move(watch_path)),
      name_(std::move(name)),
      read_(std::move(read)),
      callbacks_(std::move(callbacks)),
      deaths_(std::move(deaths)) {}

ValueWatcher::~ValueWatcher() {
  if (deaths_listener_ != 0) deaths_->remove(deaths_listener_);
}

void ValueWatcher::add(const std::string& key, BytesWatch watch) {
  std::lock_guard lock(mutex_);
  if (!subscription_) {
    std::weak_ptr<ValueWatcher> weak = weak_from_this();
    auto callbacks = callbacks_;
    // Armed before the first read, and the arm answered: a change made after that read
    // fires it. The value may live outside ZooKeeper, where a read does not queue behind the
    // arm, so a round trip on the session (which does) comes first. Unanswered, the arm is
    // retried and the watch looks again once it is in place.
    subscription_ = session_.watch_persistently(watch_path_, [weak, callbacks](const WatchEvent&) {
      // On ZooKeeper's event thread: only hand over; the read happens on the callback thread.
      callbacks->post([weak] {
        if (auto self = weak.lock()) self->on_change(0);
      });
    });
    try {
      wait_for_arm();
      last_seen_ = read_();
    } catch (...) {
      subscription_.reset();
      throw;
    }
    if (deaths_ && deaths_listener_ == 0) {
      deaths_listener_ = deaths_->add([weak] {  // on the callback thread already
        if (auto self = weak.lock()) self->on_change(0);
      });
    }
  }
  watches_[key] = std::move(watch);
}

void ValueWatcher::wait_for_arm() {
  try {
    (void)session_.exists(watch_path_);
  } catch (const ConnectionLoss&) {
  } catch (const SessionExpired&) {
  }
}

void ValueWatcher::remove(const std::string& key) {
  std::shared_ptr<void> released;  // released outside the lock: it waits for a running callback
  std::unique_lock lock(mutex_);
  watches_.erase(key);
  if (watches_.empty()) released = std::move(subscription_);
  // What the watch uses may go once this returns (a watch capturing `this` removed in a
  // destructor): a call under way ends first.
  called_.wait(lock,
               [&] { return calling_ != key || calling_thread_ == std::this_thread::get_id(); });
}

void ValueWatcher::on_change(int failed_reads) {
  Bytes current;
  std::string unreadable;
  try {
    current = read_();
  } catch (const ConnectionLoss& error) {
    unreadable = error.what();
  } catch (const SessionExpired& error) {
    unreadable = error.what();
  } catch (const BackendError& error) {
    unreadable = error.what();
  } catch (const Deleted&) {
    return;  // the object was removed: there is no new value to report, now or later
  }
  if (!unreadable.empty()) {
    // The change is known but not its value (ZooKeeper or the store is unreachable): read
    // again shortly, or the watch would stay on an older value until the next change.
    {
      std::lock_guard lock(mutex_);
      if (!subscription_) return;
    }
    if (failed_reads >= max_failed_reads) {
      log(session_.options().logger, LogLevel::error,
          "a watch on " + name_ + " gave up reading the new value: " + unreadable);
      return;
    }
    // Not a sleep: the thread runs every other callback meanwhile (a lock's loss among them).
    std::weak_ptr<ValueWatcher> weak = weak_from_this();
    callbacks_->post_after(std::chrono::milliseconds(100), [weak, failed_reads] {
      if (auto self = weak.lock()) self->on_change(failed_reads + 1);
    });
    return;
  }
  Bytes previous;
  std::vector<std::string> to_call;
  {
    std::lock_guard lock(mutex_);
    if (current == last_seen_ || !subscription_) return;
    previous = std::exchange(last_seen_, current);
    for (const auto& [key, watch] : watches_) to_call.push_back(key);
  }
  for (const auto& key : to_call) call(key, previous, current);
}

void ValueWatcher::call(const std::string& key, const Bytes& previous, const Bytes& current) {
  BytesWatch watch;
  {
    std::lock_guard lock(mutex_);
    const auto found = watches_.find(key);
    if (found == watches_.end()) return;  // removed by an earlier watch of this round
    watch = found->second;
    calling_ = key;
    calling_thread_ = std::this_thread::get_id();
  }
  try {
    watch(previous, current);
  } catch (const std::exception& error) {
    log(session_.options().logger, LogLevel::error,
        "a watch on " + name_ + " threw: " + error.what());
  } catch (...) {
    log(session_.options().logger, LogLevel::error,
        "a watch on " + name_ + " threw a non-standard exception");
  }
  std::lock_guard lock(mutex_);
  calling_.reset();
  called_.notify_all();
}

}  // namespace avout::detail
