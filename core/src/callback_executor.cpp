#include <avout/detail/atom_core.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <cstdio>
#include <exception>

namespace avout::detail {

struct CallbackExecutor::Impl {
  boost::asio::thread_pool pool{1};  // one thread: callbacks never run concurrently
  std::atomic<bool> stopping{false};
};

CallbackExecutor::CallbackExecutor() : impl_(std::make_unique<Impl>()) {}

CallbackExecutor::~CallbackExecutor() { stop(); }

void CallbackExecutor::post(std::function<void()> task) {
  if (impl_->stopping) return;
  boost::asio::post(impl_->pool, [impl = impl_.get(), task = std::move(task)] {
    // A callback (a watch re-reading the session, say) must not outlive its client's session.
    if (impl->stopping) return;
    try {
      task();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "avout: a callback threw: %s\n", error.what());
    } catch (...) {
      std::fprintf(stderr, "avout: a callback threw a non-standard exception\n");
    }
  });
}

void CallbackExecutor::stop() {
  impl_->stopping = true;
  impl_->pool.join();
}

}  // namespace avout::detail
