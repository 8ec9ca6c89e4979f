#include "stm/value_batches.hpp"

#include <avout/errors.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <condition_variable>
#include <exception>
#include <utility>

namespace avout::detail {

namespace {

// What the caller and the helpers share for one run. A helper that finds its batch already
// taken leaves without touching `work`, which may be gone by then; one that took it is
// waited for, so `work` outlives every call made through it.
struct Run {
  explicit Run(std::size_t count) : taken(count) {}
  const std::function<void(std::size_t)>* work = nullptr;
  std::vector<std::atomic<bool>> taken;
  std::mutex mutex;
  std::condition_variable finished;
  std::size_t running = 0;  // batches helpers took and have not finished
  std::exception_ptr failure;

  // Runs batch `i` unless somebody took it first.
  void take(std::size_t i) {
    if (taken[i].exchange(true)) return;
    try {
      (*work)(i);
    } catch (...) {
      std::lock_guard lock(mutex);
      if (!failure) failure = std::current_exception();
    }
  }
};

}  // namespace

StoreBatches::StoreBatches(std::size_t helpers) : helper_count_(helpers) {}

StoreBatches::~StoreBatches() {
  if (pool_) pool_->join();
}

boost::asio::thread_pool* StoreBatches::helpers() {
  if (helper_count_ == 0) return nullptr;
  std::lock_guard lock(mutex_);
  if (!pool_) pool_ = std::make_unique<boost::asio::thread_pool>(helper_count_);
  return pool_.get();
}

void StoreBatches::run(std::size_t count, const std::function<void(std::size_t)>& work) {
  auto run = std::make_shared<Run>(count);
  run->work = &work;
  if (count > 1) {
    if (auto* pool = helpers()) {
      for (std::size_t i = 1; i < count; ++i) {
        boost::asio::post(*pool, [run, i] {
          {
            std::lock_guard lock(run->mutex);
            if (run->taken[i]) return;
            ++run->running;  // counted before taking it: the caller waits for it
          }
          run->take(i);
          std::lock_guard lock(run->mutex);
          --run->running;
          run->finished.notify_all();
        });
      }
    }
  }
  for (std::size_t i = 0; i < count; ++i) run->take(i);
  std::exception_ptr failure;
  {
    std::unique_lock lock(run->mutex);
    run->finished.wait(lock, [&] { return run->running == 0; });
    // Taken out so the caller's thread holds the last reference: a helper may drop `run` after
    // the caller caught the exception, and the exception's reference count lives in the C++
    // runtime, which ThreadSanitizer does not see, so that release would be reported as a race.
    failure = std::exchange(run->failure, nullptr);
  }
  if (failure) std::rethrow_exception(failure);
}

void StoreBatches::write(std::vector<StoreWrites>& batches) {
  run(batches.size(), [&](std::size_t i) { batches[i].store->set_values(batches[i].values); });
}

void StoreBatches::read(std::vector<StoreReads>& batches) {
  run(batches.size(), [&](std::size_t i) {
    auto values = batches[i].store->get_values(batches[i].reads);
    if (values.size() != batches[i].reads.size()) {
      throw BackendError(batches[i].store->description() + ": read " +
                         std::to_string(batches[i].reads.size()) + " values, got " +
                         std::to_string(values.size()));
    }
    batches[i].values = std::move(values);
  });
}

}  // namespace avout::detail
