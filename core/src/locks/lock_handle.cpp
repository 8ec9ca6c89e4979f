// The public lock handles (distributed_lock.hpp): each call goes to the shared LockCore.
#include "locks/lock_core.hpp"

#include <avout/errors.hpp>

namespace avout {

void Lock::lock() { lock(core_->default_deadline()); }

void Lock::lock(const Deadline& deadline) {
  if (!core_->acquire(shared_, deadline)) deadline.expire("lock " + core_->name());
}

bool Lock::try_lock() { return acquire_until(std::chrono::steady_clock::now()); }

bool Lock::acquire_until(std::chrono::steady_clock::time_point deadline) {
  return core_->acquire(shared_, Deadline::at(deadline));
}

void Lock::unlock() { core_->release(shared_); }

bool Lock::is_held() const { return core_->held(shared_); }

void Lock::ensure_held() const {
  if (!is_held()) throw LockLost("lock " + core_->name() + " is not held by this thread");
}

std::uint64_t Lock::fencing_token() const { return core_->token(shared_); }

void Lock::on_lost(std::function<void()> callback) { core_->on_lost(std::move(callback)); }

const std::string& Lock::name() const { return core_->name(); }

WriterPolicy ReadWriteLock::policy() const { return *writer_.core()->policy(); }

}  // namespace avout
