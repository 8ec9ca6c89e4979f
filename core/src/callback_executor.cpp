#include "callback_executor.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "log.hpp"

#include <atomic>

namespace avout::detail {

struct CallbackExecutor::Impl {
  boost::asio::thread_pool pool{1};  // one thread: callbacks never run concurrently
  std::atomic<bool> stopping{false};
  Logger logger;
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

void CallbackExecutor::stop() {
  impl_->stopping = true;
  impl_->pool.join();
}

}  // namespace avout::detail
