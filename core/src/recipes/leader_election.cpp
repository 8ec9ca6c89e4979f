// avout::LeaderElection: the public handle over recipes/election_core.hpp, and guarded_by for
// elections (the commit multi checks the leader's node, as a lock's guarded_by does).
#include "recipes/election_core.hpp"
#include "stm/participant.hpp"

#include <avout/errors.hpp>
#include <avout/leader_election.hpp>

namespace avout {

void LeaderElection::campaign() { core_->campaign(Deadline{}); }

void LeaderElection::campaign(const Deadline& deadline) { core_->campaign(deadline); }

bool LeaderElection::is_leader() const { return core_->is_leader(); }

std::optional<std::string> LeaderElection::leader() const {
  return core_->leader(core_->default_deadline());
}

void LeaderElection::on_revoked(std::function<void()> callback) {
  core_->on_revoked(std::move(callback));
}

std::uint64_t LeaderElection::fencing_token() const { return core_->fencing_token(); }

void LeaderElection::resign() { core_->resign(); }

const std::string& LeaderElection::name() const { return core_->name(); }

const std::string& LeaderElection::id() const { return core_->id(); }

namespace {

// A leadership, for guarded_by: not tied to the thread that campaigned.
class LeadershipProof final : public detail::HoldProof {
 public:
  explicit LeadershipProof(std::shared_ptr<detail::ElectionCore> core) : core_(std::move(core)) {}

  void guard_transaction() const override {
    auto* transaction = detail::OpenTransaction::current();
    if (transaction == nullptr) throw NoTransaction("guarded_by needs a running dosync");
    const std::string node = core_->proof_of_leadership();
    transaction->add_to_commit({op::Check{node, 0}}, {}, [name = core_->name()] {
      throw LockLost("election " + name + ": leadership lost before the commit");
    });
  }

 private:
  std::shared_ptr<detail::ElectionCore> core_;
};

}  // namespace

GuardedBy guarded_by(const LeaderElection& election) {
  return GuardedBy{std::make_shared<const LeadershipProof>(election.core_)};
}

}  // namespace avout
