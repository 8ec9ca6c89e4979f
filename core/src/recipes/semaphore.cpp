// avout::Semaphore and avout::Permit: the public handles over recipes/semaphore_core.hpp, and
// a permit's proof of hold for guarded_by.
#include "recipes/semaphore_core.hpp"
#include "stm/participant.hpp"

#include <avout/semaphore.hpp>

namespace avout {

namespace {

// A permit held, for guarded_by: its node is checked inside the commit multi.
class PermitHoldProof final : public detail::HoldProof {
 public:
  PermitHoldProof(std::shared_ptr<detail::SemaphoreCore> core,
                  std::shared_ptr<detail::PermitState> state)
      : core_(std::move(core)), state_(std::move(state)) {}

  void guard_transaction() const override {
    auto* transaction = detail::OpenTransaction::current();
    if (transaction == nullptr) throw NoTransaction("guarded_by needs a running dosync");
    if (!core_ || !state_ || !core_->held(*state_)) {
      throw LockLost("semaphore " + (core_ ? core_->name() : std::string()) +
                     ": the permit is not held");
    }
    transaction->add_to_commit({op::Check{state_->node, 0}}, {}, [name = core_->name()] {
      throw LockLost("semaphore " + name + ": the permit was lost before the commit");
    });
  }

 private:
  std::shared_ptr<detail::SemaphoreCore> core_;
  std::shared_ptr<detail::PermitState> state_;
};

}  // namespace

Permit::Permit(std::shared_ptr<detail::SemaphoreCore> core,
               std::shared_ptr<detail::PermitState> state)
    : core_(std::move(core)), state_(std::move(state)) {}

Permit::~Permit() { release(); }

Permit::Permit(Permit&& other) noexcept
    : core_(std::move(other.core_)), state_(std::move(other.state_)) {}

Permit& Permit::operator=(Permit&& other) noexcept {
  if (this != &other) {
    release();
    core_ = std::move(other.core_);
    state_ = std::move(other.state_);
  }
  return *this;
}

bool Permit::is_held() const { return core_ && state_ && core_->held(*state_); }

std::uint64_t Permit::fencing_token() const { return is_held() ? state_->token : 0; }

void Permit::release() noexcept {
  if (core_ && state_) core_->release(*state_);
}

Permit Semaphore::acquire() { return acquire(Deadline{}); }

Permit Semaphore::acquire(const Deadline& deadline) {
  auto state = core_->acquire(deadline, false);
  if (!state) deadline.expire("semaphore " + core_->name() + ": acquire");
  return Permit(core_, std::move(state));
}

std::optional<Permit> Semaphore::try_acquire() {
  auto state = core_->acquire(Deadline{}, true);
  if (!state) return std::nullopt;
  return Permit(core_, std::move(state));
}

std::optional<Permit> Semaphore::try_acquire_for(std::chrono::milliseconds timeout) {
  auto state = core_->acquire(Deadline::after(timeout), false);
  if (!state) return std::nullopt;
  return Permit(core_, std::move(state));
}

void Semaphore::on_lost(std::function<void()> callback) { core_->on_lost(std::move(callback)); }

std::size_t Semaphore::permits() const { return core_->permits(); }

const std::string& Semaphore::name() const { return core_->name(); }

GuardedBy guarded_by(const Permit& permit) {
  return GuardedBy{std::make_shared<const PermitHoldProof>(permit.core_, permit.state_)};
}

}  // namespace avout
