#include "agents/agent_workers.hpp"

#include "agents/agent_core.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "base/log.hpp"

#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace avout::detail {

namespace {

void run_reporting(const Logger& logger, const std::function<void()>& task) {
  run_logging_errors(logger, "an agent task", task);
}

// A thread per task that finds no idle thread; threads stay for later tasks until stop().
class GrowingPool {
 public:
  explicit GrowingPool(Logger logger) : logger_(std::move(logger)) {}
  void post(std::function<void()> task) {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    tasks_.push_back(std::move(task));
    if (idle_ == 0)
      threads_.emplace_back([this] { work(); });
    else
      ready_.notify_one();
  }
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      tasks_.clear();
      ready_.notify_all();
    }
    for (auto& thread : threads_) thread.join();
    threads_.clear();
  }

 private:
  void work() {
    std::unique_lock lock(mutex_);
    while (true) {
      ++idle_;
      ready_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      --idle_;
      if (stopping_) return;
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      run_reporting(logger_, task);
      lock.lock();
    }
  }

  Logger logger_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  std::size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace

struct AgentWorkers::Impl {
  explicit Impl(const Logger& logger) : growing(logger) {}
  boost::asio::thread_pool fixed{std::max(2u, std::thread::hardware_concurrency())};
  GrowingPool growing;
  std::mutex mutex;
  bool stopped = false;
  std::stop_source stop;  // requested once stopped is set
  // Counted: a retain made before the matching release of an earlier one ran keeps the agent.
  struct Retained {
    std::shared_ptr<AgentCore> agent;
    std::size_t count = 0;
  };
  std::map<const AgentCore*, Retained> retained;
};

AgentWorkers::AgentWorkers(Logger logger)
    : logger_(std::move(logger)), impl_(std::make_unique<Impl>(logger_)) {}

AgentWorkers::~AgentWorkers() { stop(); }

void AgentWorkers::post(bool blocking, std::function<void()> task) {
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->stopped) return;
  }
  if (blocking) {
    impl_->growing.post(std::move(task));
  } else {
    boost::asio::post(impl_->fixed,
                      [this, task = std::move(task)] { run_reporting(logger_, task); });
  }
}

void AgentWorkers::retain(const std::shared_ptr<AgentCore>& agent) {
  std::lock_guard lock(impl_->mutex);
  if (impl_->stopped) return;
  auto& entry = impl_->retained[agent.get()];
  entry.agent = agent;
  ++entry.count;
}

void AgentWorkers::release(const AgentCore* agent) {
  std::shared_ptr<AgentCore> last;  // may be the last owner: destroyed outside the lock
  std::lock_guard lock(impl_->mutex);
  if (auto found = impl_->retained.find(agent); found != impl_->retained.end()) {
    if (--found->second.count > 0) return;
    last = std::move(found->second.agent);
    impl_->retained.erase(found);
  }
}

bool AgentWorkers::stopping() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stopped;
}

std::stop_token AgentWorkers::stop_token() const { return impl_->stop.get_token(); }

void AgentWorkers::stop() {
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->stopped) return;
    impl_->stopped = true;
  }
  impl_->stop.request_stop();  // wakes the tasks waiting for ZooKeeper before the joins
  impl_->fixed.stop();
  impl_->fixed.join();
  impl_->growing.stop();
  std::map<const AgentCore*, Impl::Retained> retained;
  {
    std::lock_guard lock(impl_->mutex);
    retained.swap(impl_->retained);
  }
}

}  // namespace avout::detail
