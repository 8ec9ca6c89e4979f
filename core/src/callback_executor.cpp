#include <avout/detail/atom_core.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <cstdio>
#include <exception>

namespace avout::detail {

struct CallbackExecutor::Impl {
  boost::asio::thread_pool pool{1};  // one thread: callbacks never run concurrently
};

CallbackExecutor::CallbackExecutor() : impl_(std::make_unique<Impl>()) {}

CallbackExecutor::~CallbackExecutor() { stop(); }

void CallbackExecutor::post(std::function<void()> task) {
  boost::asio::post(impl_->pool, [task = std::move(task)] {
    try {
      task();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "avout: a callback threw: %s\n", error.what());
    } catch (...) {
      std::fprintf(stderr, "avout: a callback threw a non-standard exception\n");
    }
  });
}

void CallbackExecutor::stop() { impl_->pool.join(); }

}  // namespace avout::detail
