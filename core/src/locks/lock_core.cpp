#include "locks/lock_core.hpp"
#include "queue/node_removals.hpp"
#include "records/lock_policy_record.hpp"

#include <avout/errors.hpp>

#include <stop_token>

namespace avout::detail {

LockCore::LockCore(ZooKeeperSession& session, SessionLiveness& liveness, std::string name,
                   std::string path, std::optional<WriterPolicy> policy,
                   std::chrono::milliseconds quiet_period,
                   std::shared_ptr<CallbackExecutor> callbacks,
                   std::shared_ptr<NodeRemovals> removals,
                   std::optional<std::chrono::milliseconds> operation_timeout,
                   MetricsRecorder metrics)
    : session_(session),
      liveness_(liveness),
      name_(std::move(name)),
      folder_(path),
      queues_(session, path),
      policy_(policy),
      quiet_period_(quiet_period),
      callbacks_(std::move(callbacks)),
      removals_(std::move(removals)),
      operation_timeout_(operation_timeout),
      metrics_(std::move(metrics)) {}

Deadline LockCore::default_deadline() const {
  return operation_timeout_ ? Deadline::after(*operation_timeout_) : Deadline{};
}

LockCore::~LockCore() {
  // After unsubscribe returns the monitor never calls this core again.
  if (subscription_ != 0) liveness_.unsubscribe(subscription_);
  std::vector<std::string> abandoned;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
    abandoned = nodes_of_live_holds();
  }
  // No handle is left to unlock them, so holds still in place would bar every other process
  // (and this one) until the session ends: the client's removals delete them (a destructor
  // must not wait for replies), retrying until done or the session is known gone.
  const auto generation = session_.generation();
  for (auto& node : abandoned) removals_->post(std::move(node), generation);
}

void LockCore::make_folders() {
  session_.create_recursive(queues_.writers.folder());
  if (policy_) {
    session_.create_recursive(queues_.readers.folder());
    session_.create_recursive(queues_.gates.folder());
    claim_policy();
  }
}

void LockCore::start() {
  make_folders();
  removals_->start();
  // By reference, not a strong one: a subscriber owning the core could end it inside the
  // monitor's dispatch.
  subscription_ = liveness_.subscribe(*this);
}

void LockCore::claim_policy() {
  // The policy is the lock's, not the handle's: a hard writer closes no gate and soft readers
  // look only at gates, so two policies on one lock would let a reader in beside a writer.
  // The first opener records its policy in the lock's folder node (a conditional write on
  // the folder's empty data: one opener wins); the others must name the same one.
  const std::string mine = writer_policy_name(*policy_);
  while (true) {
    const auto folder = session_.get(folder_);
    if (folder.data.empty()) {
      try {
        session_.set(folder_, encode_writer_policy(*policy_), folder.stat.version);
      } catch (const BadVersion&) {
      } catch (const ConnectionLoss&) {  // the set may have landed: the read tells
      }
      continue;  // read what was recorded, by us or by the opener that came first
    }
    const std::string recorded = decode_writer_policy(folder.data);
    if (recorded == mine) return;
    throw Mismatch("read-write lock " + name_ + ": opened with writer policy " + mine +
                   ", but it was created with writer policy " + recorded);
  }
}

bool LockCore::acquire(bool shared, const Deadline& deadline) {
  std::uint64_t generation = 0;
  if (reenter(shared, generation)) return true;
  const auto started = metrics_.start();  // a reentry waits for nothing: not measured
  const LockKind kind = !policy_ ? LockKind::mutex : shared ? LockKind::read : LockKind::write;
  // Counted until this call returns: a stall during it leaves the hold it takes unconfirmed.
  struct Acquiring {
    LockCore& core;
    ~Acquiring() {
      std::lock_guard lock(core.mutex_);
      --core.acquiring_;
    }
  } acquiring{*this};
  // A stop request wakes this thread's waits (their predicates look at the token).
  std::stop_callback wake_on_stop(deadline.stop_token(), [this] {
    std::lock_guard lock(mutex_);
    changed_.notify_all();
  });
  Hold hold;
  hold.shared = shared;
  bool acquired = false;
  auto attempt = [&] {
    return shared ? acquire_shared(deadline, hold) : acquire_exclusive(deadline, hold);
  };
  try {
    try {
      acquired = attempt();
    } catch (const NoNode&) {
      // Client::remove_lock removed the folders while the lock was free (none of ours can
      // be in a folder it removed): they are made again, as on a first open, and once more
      // the acquisition runs.
      give_up({hold.gate, hold.node}, deadline);
      hold = Hold{};
      hold.shared = shared;
      make_folders();
      acquired = attempt();
    }
  } catch (...) {
    // Nothing an acquisition made outlives its failure: a node made on a session renewed
    // mid-acquisition (a create retried after a lost reply lands on the new session, while
    // the listing sent with it reports the old one expired) lives on and would bar every
    // waiter behind it until this client closes.
    give_up({hold.gate, hold.node}, deadline);
    throw;
  }
  if (!acquired) {
    metrics_.lock_waited(kind, started, false);
    return false;
  }
  keep(std::move(hold), generation, deadline);
  metrics_.lock_waited(kind, started, true);
  return true;
}

bool LockCore::reenter(bool shared, std::uint64_t& generation) {
  std::lock_guard lock(mutex_);
  auto found = holds_.find(std::this_thread::get_id());
  if (found != holds_.end() && found->second.lost) {
    holds_.erase(found);
  } else if (found != holds_.end()) {
    if (found->second.shared && !shared) {
      throw Error("lock " + name_ +
                  ": this thread reads; asking to write would upgrade a read "
                  "hold, which can deadlock two readers");
    }
    ++found->second.count;  // reentrant (a writer may also read)
    return true;
  }
  generation = lost_generation_;
  ++acquiring_;
  return false;
}

void LockCore::keep(Hold hold, std::uint64_t generation, const Deadline& deadline) {
  {
    std::lock_guard lock(mutex_);
    if (lost_generation_ == generation) {
      hold.count = 1;
      holds_[std::this_thread::get_id()] = std::move(hold);
      return;
    }
  }
  // The session expired while we acquired: some nodes may live on the new session.
  give_up({hold.gate, hold.node}, deadline);
  throw LockLost("lock " + name_ + ": the ZooKeeper session expired while acquiring");
}

}  // namespace avout::detail
