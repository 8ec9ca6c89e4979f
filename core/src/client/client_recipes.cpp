// Client's factories of the recipes on the sequential-queue engine (core/src/recipes).
#include "recipes/barrier_core.hpp"
#include "recipes/election_core.hpp"
#include "recipes/semaphore_core.hpp"
#include "recipes/work_queue_core.hpp"
#include "runtime/runtime.hpp"

#include <avout/client.hpp>

namespace avout {

Barrier Client::barrier(const std::string& name, std::size_t n) {
  validate_path(name);
  if (n == 0) throw InvalidOption("barrier " + name + ": a round needs at least one participant");
  return Barrier(std::make_shared<detail::BarrierCore>(*session_, node_removals_, name,
                                                       runtime_->layout().barrier(name), n));
}

Semaphore Client::semaphore(const std::string& name, std::size_t n) {
  validate_path(name);
  if (n == 0) throw InvalidOption("semaphore " + name + ": it needs at least one permit");
  auto core = std::make_shared<detail::SemaphoreCore>(
      *session_, runtime_->liveness(), callbacks_, node_removals_, name,
      runtime_->layout().semaphore(name), n, runtime_->metrics());
  core->start();
  return Semaphore(std::move(core));
}

LeaderElection Client::leader_election(const std::string& name, const std::string& id) {
  validate_path(name);
  auto core = std::make_shared<detail::ElectionCore>(*session_, runtime_->liveness(), callbacks_,
                                                     node_removals_, name,
                                                     runtime_->layout().election(name), id);
  core->start();
  return LeaderElection(std::move(core));
}

std::shared_ptr<detail::WorkQueueHandle> Client::attach_work_queue(const std::string& name) {
  validate_path(name);
  return std::make_shared<detail::WorkQueueCore>(*session_, *stm_, node_removals_, name,
                                                 runtime_->layout().work_queue(name));
}

}  // namespace avout
