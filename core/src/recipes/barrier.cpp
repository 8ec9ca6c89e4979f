// avout::Barrier: the public handle over recipes/barrier_core.hpp.
#include "recipes/barrier_core.hpp"

#include <avout/barrier.hpp>

namespace avout {

void Barrier::enter() { core_->enter(Deadline{}); }

void Barrier::enter(const Deadline& deadline) { core_->enter(deadline); }

void Barrier::leave() { core_->leave(Deadline{}); }

void Barrier::leave(const Deadline& deadline) { core_->leave(deadline); }

std::size_t Barrier::participants() const { return core_->participants(); }

const std::string& Barrier::name() const { return core_->name(); }

}  // namespace avout
