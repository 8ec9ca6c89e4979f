#include "base/callback_executor.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include "base/log.hpp"

#include <atomic>
#include <mutex>
#include <set>

namespace avout::detail {

struct CallbackExecutor::Impl {
  boost::asio::thread_pool pool{1};  // one thread: callbacks never run concurrently
  std::atomic<bool> stopping{false};
  Logger logger;
  std::mutex timers_mutex;                                      // guards `timers`
  std::set<std::shared_ptr<boost::asio::steady_timer>> timers;  // of post_after, not yet due
};

CallbackExecutor::CallbackExecutor(Logger logger) : impl_(std::make_unique<Impl>()) {
  impl_->logger = std::move(logger);
}

CallbackExecutor::~CallbackExecutor() { stop(); }

void CallbackExecutor::post(std::function<void()> task) {
  if (impl_->stopping) return;
  boost::asio::post(impl_->pool, [impl = impl_.get(), task = std::move(task)] {
    // A callback (a watch re-reading the session, say) must not outlive its client's session.
    if (impl->stopping) return;
    run_logging_errors(impl->logger, "a callback", task);
  });
}

void CallbackExecutor::post_after(std::chrono::milliseconds delay, std::function<void()> task) {
  auto timer = std::make_shared<boost::asio::steady_timer>(impl_->pool.get_executor(), delay);
  // Armed under the lock that stop()'s cancelling takes: a timer armed once it began would
  // keep the pool, and stop(), waiting out its delay.
  std::lock_guard lock(impl_->timers_mutex);
  if (impl_->stopping) return;
  impl_->timers.insert(timer);
  timer->async_wait([impl = impl_.get(), timer, task = std::move(task)](const auto&) {
    {
      std::lock_guard lock(impl->timers_mutex);
      impl->timers.erase(timer);
    }
    if (impl->stopping) return;  // cancelled by stop(), or due after it began
    run_logging_errors(impl->logger, "a callback", task);
  });
}

void CallbackExecutor::stop() {
  {
    std::lock_guard lock(impl_->timers_mutex);
    impl_->stopping = true;
  }
  // The pool's thread cancels the timers: a timer is not safe to touch from two threads.
  boost::asio::post(impl_->pool, [impl = impl_.get()] {
    std::lock_guard lock(impl->timers_mutex);
    for (const auto& timer : impl->timers) timer->cancel();
  });
  impl_->pool.join();
}

}  // namespace avout::detail
