#include "locks/lock_core.hpp"
#include "base/back_off.hpp"
#include "base/callback_executor.hpp"
#include "base/hex.hpp"
#include "locks/lock_removals.hpp"
#include "queue/sequence.hpp"
#include "records/lock_policy_record.hpp"
#include "stm/participant.hpp"
#include "base/unique_ids.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <cctype>
#include <string_view>

namespace avout::detail {

namespace {

constexpr std::size_t id_digits = 16;
constexpr std::size_t prefix_length = 2 + id_digits + 1;  // "<kind>-<id>-"

// True for a node avout queued in a lock folder: <kind>-<16 hex digits>-<sequence>. Other
// children (the folders of a lock whose name nests below this one) are not ours.
bool is_node(const std::string& name, char kind) {
  if (name.size() <= prefix_length) return false;
  if (name[0] != kind || name[1] != '-' || name[prefix_length - 1] != '-') return false;
  for (std::size_t i = 2; i < prefix_length - 1; ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  }
  return parse_sequence(std::string_view(name).substr(prefix_length)).has_value();
}

std::int32_t sequence_of(const std::string& name) {
  return *parse_sequence(std::string_view(name).substr(prefix_length));
}

// The nodes of `kind` among `names`, in queue order (the counter wraps: sequence.hpp).
std::vector<std::string> queue_of(std::vector<std::string> names, char kind) {
  std::erase_if(names, [&](const std::string& name) { return !is_node(name, kind); });
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return SequenceOrder{}(sequence_of(a), sequence_of(b));
  });
  return names;
}

// "<kind>-<fresh unique id>-": the prefix of one attempt's node.
std::string own_prefix(char kind) {
  return std::string(1, kind) + "-" + hex(unique_writer_id(), id_digits) + "-";
}

std::string last_segment(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// A connection loss without a session event (a reply that timed out or was lost while the
// connection stayed up) wakes nobody: waits that ride out connection loss retry after a
// pause growing from 50 ms to a second.
constexpr BackOff retry_pauses{std::chrono::milliseconds(50), std::chrono::seconds(1)};

// How long a lock wait that gave up (its deadline passed) still waits for its removals'
// replies before leaving them to the client's removals and returning.
constexpr std::chrono::milliseconds give_up_grace{50};

}  // namespace

LockCore::LockCore(ZooKeeperSession& session, SessionLiveness& liveness, std::string name,
                   std::string path,
                   std::optional<WriterPolicy> policy, std::chrono::milliseconds quiet_period,
                   std::shared_ptr<CallbackExecutor> callbacks,
                   std::shared_ptr<LockRemovals> removals,
                   std::optional<std::chrono::milliseconds> operation_timeout)
    : session_(session),
      liveness_(liveness),
      name_(std::move(name)),
      folder_(path),
      writers_(path + "/writers"),
      readers_(path + "/readers"),
      gates_(path + "/gates"),
      policy_(policy),
      quiet_period_(quiet_period),
      callbacks_(std::move(callbacks)),
      removals_(std::move(removals)),
      operation_timeout_(operation_timeout) {}

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

std::vector<std::string> LockCore::nodes_of_live_holds() const {
  std::vector<std::string> nodes;
  for (const auto& [thread, hold] : holds_) {
    if (hold.lost) continue;  // gone with their session, or already with removals_
    if (!hold.gate.empty()) nodes.push_back(hold.gate);  // first: readers may enter then
    if (!hold.node.empty()) nodes.push_back(hold.node);
  }
  return nodes;
}

void LockCore::start() {
  session_.create_recursive(writers_);
  if (policy_) {
    session_.create_recursive(readers_);
    session_.create_recursive(gates_);
    claim_policy();
  }
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

void LockCore::on_liveness(LivenessEvent event) {
  std::vector<std::function<void()>> to_call;
  {
    std::lock_guard lock(mutex_);
    switch (event) {
      case LivenessEvent::stalled:
      case LivenessEvent::confirmed:
        return;  // held() asks the monitor; waits need not look again
      case LivenessEvent::disconnected:
      case LivenessEvent::connected:
        break;
      case LivenessEvent::lapsed:
        // The server may have ended the session: another process may hold the lock now.
        // The session may also live on, so the nodes go to removals_.
        to_call = mark_lost(true);
        break;
      case LivenessEvent::expired:  // the ephemeral nodes are gone
        ++lost_generation_;
        to_call = mark_lost(false);
        break;
    }
    ++events_;
    ++session_events_;  // waiters look again: their own node may be lost too
    changed_.notify_all();
  }
  for (auto& callback : to_call) callbacks_->post(callback);
}

bool LockCore::needs_confirmation() const {
  // A hold taken on what an acquisition saw before a stall starts unconfirmed too (issue 35,
  // item 12).
  std::lock_guard lock(mutex_);
  return !holds_.empty() || acquiring_ != 0;
}

std::vector<std::function<void()>> LockCore::mark_lost(bool keep) {
  bool any = false;
  const auto generation = keep ? session_.generation() : 0;
  for (auto& [thread, hold] : holds_) {
    if (hold.lost) continue;
    any = true;
    if (keep) {
      if (!hold.gate.empty()) removals_->post(hold.gate, generation);
      removals_->post(hold.node, generation);
    }
    hold.lost = true;
  }
  return any ? lost_callbacks_ : std::vector<std::function<void()>>{};
}

WatchCallback LockCore::wake(std::shared_ptr<bool> fired) const {
  return [weak = std::weak_ptr<const LockCore>(weak_from_this()), fired](const WatchEvent&) {
    auto self = std::const_pointer_cast<LockCore>(weak.lock());
    if (!self) return;
    std::lock_guard lock(self->mutex_);
    if (fired) *fired = true;
    ++self->events_;
    self->changed_.notify_all();
  };
}

bool LockCore::wait_fired(const std::shared_ptr<bool>& fired, std::uint64_t session_seen,
                          const Deadline& deadline) {
  // Only our own watch (or a session change) wakes us: other waiters' churn does not.
  std::unique_lock lock(mutex_);
  changed_.wait_until(lock, deadline.time_or_far(), [&] {
    return *fired || session_events_ != session_seen || stopping_ || deadline.stop_requested();
  });
  return !deadline.expired();
}

std::uint64_t LockCore::session_events() const {
  std::lock_guard lock(mutex_);
  return session_events_;
}

template <typename T>
std::optional<T> LockCore::reply_by(std::future<T> request, const Deadline& deadline) const {
  std::shared_future<T> reply = request.share();
  if (!deadline.bounded()) return session_.wait(reply);
  return session_.wait(reply, deadline);
}

bool LockCore::arrived_by(std::future<void> request, const Deadline& deadline) const {
  const ReplyDeadline bound(deadline);
  try {
    session_.wait(request);
    return true;
  } catch (const Timeout&) {
    return false;
  }
}

std::optional<std::vector<std::string>> LockCore::synced_children(const std::string& folder,
                                                                  const Deadline& deadline,
                                                                  WatchCallback watch) const {
  // Replies come in request order: once the listing is in, so is the sync's answer.
  auto synced = session_.sync_async(folder);
  auto listed = reply_by(session_.children_async(folder, std::move(watch)), deadline);
  if (!listed) return std::nullopt;
  synced.get();
  return listed;
}

std::optional<std::string> LockCore::create_own(const std::string& folder, const std::string& own,
                                                const Deadline& deadline, bool sent) {
  // Curator's protected mode: a create whose reply was lost may have landed, so before
  // creating again look for the unique id in the name (a sync and a listing later on the
  // same session show it). A create still unknown at the deadline is left to removals_,
  // which removes what it made once the session answers (or ends).
  std::uint64_t sent_in = session_.generation();
  for (std::size_t attempt = 0;; ++attempt) {
    const auto seen = session_events();
    try {
      if (sent && session_.generation() == sent_in) {
        const auto names = synced_children(folder, deadline);
        if (!names) break;
        for (const auto& child : *names) {
          if (child.rfind(own, 0) == 0) return folder + "/" + child;
        }
      }
      sent = true;
      sent_in = session_.generation();
      auto created = reply_by(session_.create_async(folder + "/" + own, {}, CreateMode::ephemeral_sequential), deadline);
      if (!created) break;
      return created;
    } catch (const ConnectionLoss&) {
    }
    if (!ride_out(attempt, seen, deadline)) break;
    std::lock_guard lock(mutex_);
    if (stopping_) throw ConnectionLoss("lock " + name_ + ": closed while creating its node");
  }
  if (sent) removals_->post_created(folder, own, sent_in);
  return std::nullopt;
}

bool LockCore::ride_out(std::size_t attempt, std::uint64_t seen, const Deadline& deadline) {
  const auto pause = std::chrono::steady_clock::now() + back_off_pause(attempt, retry_pauses);
  (void)wait_fired(std::make_shared<bool>(false), seen, deadline.no_later_than(pause));
  return !deadline.expired();
}

void LockCore::give_up(std::vector<std::string> nodes, const Deadline& deadline) {
  // Sent at once, so this session's later requests see them gone; a reply not in by the
  // deadline (or shortly after it, once it passed) leaves the node to removals_.
  auto until = std::chrono::steady_clock::now() + give_up_grace;
  if (!deadline.expired()) until = std::max(until, deadline.time_or_far());
  const auto generation = session_.generation();
  std::vector<std::pair<std::string, std::future<void>>> sent;
  for (auto& node : nodes) {
    if (node.empty()) continue;
    try {
      auto reply = session_.remove_async(node, 0);  // never changed: version 0
      sent.emplace_back(std::move(node), std::move(reply));
    } catch (const Error&) {
      removals_->post(std::move(node), generation);
    }
  }
  for (auto& [node, request] : sent) {
    try {
      if (arrived_by(std::move(request), Deadline::at(until))) continue;
    } catch (const NoNode&) {
      continue;
    } catch (const SessionExpired&) {
      continue;  // the node went with the session
    } catch (const Error&) {
    }
    removals_->post(std::move(node), generation);
  }
}

void LockCore::remove_own(const std::string& node) {
  // Done once deleted or known gone with the session. While disconnected, wait for the
  // session to come back; once the server may have ended it, the client's removals take the
  // node over (and delete it if the session lives on).
  const auto generation = session_.generation();
  for (std::size_t attempt = 0;; ++attempt) {
    const auto seen = session_events();
    try {
      if (session_.generation() != generation) return;  // the node went with its session
      session_.remove(node, 0);  // ephemeral nodes of avout are never changed: version 0
      return;
    } catch (const NoNode&) {
      return;
    } catch (const SessionExpired&) {
      return;  // the node went with the session
    } catch (const ConnectionLoss&) {
    }
    std::unique_lock lock(mutex_);
    const bool woken = changed_.wait_for(lock, back_off_pause(attempt, retry_pauses), [&] {
      return session_events_ != seen || stopping_ || liveness_.lapsed();
    });
    if (!woken || session_events_ != seen) continue;
    removals_->post(node, generation);  // retried there until done or the session is gone
    return;
  }
}

void LockCore::remove_hold_nodes(const Hold& hold) {
  // The gate first: readers may enter as soon as it is gone; then our place in line.
  if (!hold.gate.empty()) remove_own(hold.gate);
  if (!hold.node.empty()) remove_own(hold.node);
}

const LockCore::Hold* LockCore::hold_of_this_thread() const {
  auto found = holds_.find(std::this_thread::get_id());
  return found == holds_.end() ? nullptr : &found->second;
}

bool LockCore::acquire(bool shared, const Deadline& deadline) {
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(mutex_);
    auto found = holds_.find(std::this_thread::get_id());
    if (found != holds_.end() && found->second.lost) holds_.erase(found);
    else if (found != holds_.end()) {
      if (found->second.shared && !shared) {
        throw Error("lock " + name_ + ": this thread reads; asking to write would upgrade a read "
                    "hold, which can deadlock two readers");
      }
      ++found->second.count;  // reentrant (a writer may also read)
      return true;
    }
    generation = lost_generation_;
    ++acquiring_;
  }
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
  try {
    acquired = shared ? acquire_shared(deadline, hold) : acquire_exclusive(deadline, hold);
  } catch (...) {
    // Nothing an acquisition made outlives its failure: a node made on a session renewed
    // mid-acquisition (a create retried after a lost reply lands on the new session, while
    // the listing sent with it reports the old one expired) lives on and would bar every
    // waiter behind it until this client closes.
    give_up({hold.gate, hold.node}, deadline);
    throw;
  }
  if (!acquired) return false;
  {
    std::lock_guard lock(mutex_);
    if (lost_generation_ == generation) {
      hold.count = 1;
      holds_[std::this_thread::get_id()] = hold;
      return true;
    }
  }
  // The session expired while we acquired: some nodes may live on the new session.
  give_up({hold.gate, hold.node}, deadline);
  throw LockLost("lock " + name_ + ": the ZooKeeper session expired while acquiring");
}

bool LockCore::acquire_exclusive(const Deadline& deadline, Hold& hold) {
  // The create and the first listing travel together: the listing, later on the same
  // session, already holds our node, so an uncontended lock costs one round trip.
  const std::string own_writer = own_prefix('w');
  const auto generation = session_.generation();
  auto created = session_.create_async(writers_ + "/" + own_writer, {}, CreateMode::ephemeral_sequential);
  auto first_listing = session_.children_async(writers_);
  std::optional<std::string> node;
  try {
    node = reply_by(std::move(created), deadline);
    if (!node) removals_->post_created(writers_, own_writer, generation);  // outcome unknown
  } catch (const ConnectionLoss&) {
    node = create_own(writers_, own_writer, deadline, true);
  }
  if (!node) return false;
  hold.node = *node;
  std::optional<std::vector<std::string>> listed;
  try {
    listed = reply_by(std::move(first_listing), deadline);  // nullopt: first_in_line sees the deadline
  } catch (const ConnectionLoss&) {
  }
  const std::string own = last_segment(hold.node);
  auto leave = [&] { give_up({hold.gate, hold.node}, deadline); };
  try {
    for (std::size_t losses = 0;;) {
      const auto seen = session_events();
      try {
        if (first_in_line(own, listed, seen, deadline)) break;
      } catch (const ConnectionLoss&) {
        // The session may well survive: look again after the reconnect (or expiry) or a pause.
        listed.reset();
        if (!ride_out(losses++, seen, deadline)) {
          leave();
          return false;
        }
        continue;
      }
      if (deadline.expired()) {
        leave();
        return false;
      }
    }
    if (!policy_) return true;  // a plain mutex: first in line holds
    if (*policy_ == WriterPolicy::hard) {
      // Readers enter only while no writer is queued, so the queue itself is the gate:
      // successive writers keep new readers out. Wait for those inside to leave.
      if (!wait_for_readers_to_leave(deadline, false)) {
        leave();
        return false;
      }
      return true;
    }
    while (true) {
      if (!wait_for_readers_to_leave(deadline, *policy_ == WriterPolicy::timed_soft)) {
        leave();
        return false;
      }
      // Close the gate: readers arriving from now on wait. Each gate has a name of its own,
      // so no other writer's (or session's) removal can take ours away.
      auto gate = create_own(gates_, own_prefix('g'), deadline);
      if (!gate) {
        leave();
        return false;
      }
      hold.gate = *gate;
      // A reader may have entered between our look and the gate: look again, riding out a
      // connection loss with the gate closed (issue 35, item 12).
      std::optional<std::vector<std::string>> readers;
      for (std::size_t losses = 0; !readers;) {
        const auto seen = session_events();
        try {
          readers = synced_children(readers_, deadline);
          if (!readers) break;  // the deadline passed
        } catch (const ConnectionLoss&) {
          if (!ride_out(losses++, seen, deadline)) break;
        }
      }
      if (!readers) {
        leave();
        return false;
      }
      if (queue_of(*readers, 'r').empty()) return true;
      give_up({hold.gate}, deadline);
      hold.gate.clear();
    }
  } catch (...) {
    leave();
    throw;
  }
}

bool LockCore::first_in_line(const std::string& own, std::optional<std::vector<std::string>>& listed,
                             std::uint64_t seen, const Deadline& deadline) {
  if (!listed) listed = reply_by(session_.children_async(writers_), deadline);
  if (!listed) return false;  // the deadline passed
  const auto children = queue_of(std::move(*listed), 'w');
  listed.reset();
  auto mine = std::find(children.begin(), children.end(), own);
  if (mine == children.end()) throw LockLost("lock " + name_ + ": its node vanished (session lost)");
  if (mine == children.begin()) return true;
  // Wait for the writer just before us only: no herd. Its deletion means "list again".
  const std::string predecessor = writers_ + "/" + *std::prev(mine);
  auto fired = std::make_shared<bool>(false);
  const auto stat = reply_by(session_.exists_async(predecessor, wake(fired)), deadline);
  if (stat && *stat) (void)wait_fired(fired, seen, deadline);
  return false;
}

bool LockCore::wait_for_readers_to_leave(const Deadline& deadline,
                                         bool quiet) {
  for (std::size_t losses = 0;;) {
    const auto seen = session_events();
    auto fired = std::make_shared<bool>(false);
    bool empty = false;
    try {
      const auto readers = synced_children(readers_, deadline, wake(fired));
      if (!readers) return false;  // the deadline passed
      empty = queue_of(*readers, 'r').empty();
    } catch (const ConnectionLoss&) {
      if (!ride_out(losses++, seen, deadline)) return false;
      continue;
    }
    if (!empty) {
      if (!wait_fired(fired, seen, deadline)) return false;
      continue;
    }
    if (!quiet) return true;
    // timed_soft: take the lock only after a quiet period in which no reader came or went.
    const Deadline quiet_end =
        deadline.no_later_than(std::chrono::steady_clock::now() + quiet_period_);
    if (!wait_fired(fired, seen, quiet_end)) return !deadline.expired();  // quiet, or out of time
    if (deadline.expired()) return false;
  }
}

bool LockCore::acquire_shared(const Deadline& deadline, Hold& hold) {
  const bool hard = *policy_ == WriterPolicy::hard;
  // What bars readers: any queued writer (hard) or a closed gate (soft).
  const std::string& barriers = hard ? writers_ : gates_;
  const char barrier_kind = hard ? 'w' : 'g';
  for (std::size_t losses = 0;;) {
    const auto seen = session_events();
    auto fired = std::make_shared<bool>(false);
    bool lost = false;
    try {
      auto node = create_own(readers_, own_prefix('r'), deadline);
      if (!node) return false;  // the deadline passed; an unknown create is removals_'s
      hold.node = *node;
      // The sync makes our view at least as new as our own create: a writer that queued
      // (hard) or closed the gate (soft) before it is seen; one that does so after sees us.
      const auto listed = synced_children(barriers, deadline);
      if (!listed) {
        give_up({hold.node}, deadline);
        return false;
      }
      const auto barring = queue_of(*listed, barrier_kind);
      if (barring.empty()) return true;
      // Wait for the newest barrier only: readers are not woken by every change of the
      // writer queue (no herd), and once it is gone the earlier ones are too (FIFO).
      const auto stat = reply_by(session_.exists_async(barriers + "/" + barring.back(), wake(fired)), deadline);
      if (stat && !*stat) *fired = true;
    } catch (const ConnectionLoss&) {
      // Our node (if any) goes, and we look again after the reconnect or a pause.
      lost = true;
    } catch (...) {
      give_up({hold.node}, deadline);
      throw;
    }
    give_up({hold.node}, deadline);
    hold.node.clear();
    if (!(lost ? ride_out(losses++, seen, deadline) : wait_fired(fired, seen, deadline))) return false;
  }
}

void LockCore::release(bool shared) {
  (void)shared;
  Hold ended;
  {
    std::lock_guard lock(mutex_);
    auto found = holds_.find(std::this_thread::get_id());
    if (found == holds_.end()) {
      throw LockLost("lock " + name_ + ": unlock() by a thread that does not hold it");
    }
    if (found->second.count > 1) {
      --found->second.count;
      return;
    }
    if (found->second.lost) {
      holds_.erase(found);  // the nodes went with the session or go once it is back
      return;
    }
    ended = found->second;
  }
  // Local state goes only after the nodes are deleted or known gone (DESIGN's lock rules):
  // until then this thread still holds, as far as anyone can tell.
  remove_hold_nodes(ended);
  std::lock_guard lock(mutex_);
  holds_.erase(std::this_thread::get_id());
}

bool LockCore::held(bool shared) const {
  std::lock_guard lock(mutex_);
  const Hold* hold = hold_of_this_thread();
  if (hold == nullptr || hold->lost) return false;
  if (!shared && hold->shared) return false;
  // Not after a stall of this process long enough for the session to have ended, nor past
  // the moment the server may have ended it while disconnected (the monitor marks it soon).
  return liveness_.may_hold();
}

std::uint64_t LockCore::token(bool shared) {
  std::string proof;
  {
    if (!held(shared)) return 0;
    std::lock_guard lock(mutex_);
    const Hold* hold = hold_of_this_thread();
    if (hold->token != 0) return hold->token;
    // A soft writer's hold begins when its gate closes: readers may have held after its
    // node was queued.
    proof = hold->gate.empty() ? hold->node : hold->gate;
  }
  const auto stat = session_.exists(proof);
  if (!stat) return 0;  // gone with the session: not held
  std::lock_guard lock(mutex_);
  auto found = holds_.find(std::this_thread::get_id());
  if (found == holds_.end() || found->second.lost) return 0;
  found->second.token = static_cast<std::uint64_t>(stat->czxid);
  return found->second.token;
}

void LockCore::on_lost(std::function<void()> callback) {
  std::lock_guard lock(mutex_);
  lost_callbacks_.push_back(std::move(callback));
}

std::string LockCore::proof_of_hold(bool shared) const {
  if (!held(shared)) throw LockLost("lock " + name_ + " is not held by this thread");
  std::lock_guard lock(mutex_);
  return hold_of_this_thread()->node;
}

void guard_transaction(const GuardedBy& guard) {
  auto* transaction = OpenTransaction::current();
  if (transaction == nullptr) throw NoTransaction("guarded_by needs a running dosync");
  const std::string node = guard.lock->proof_of_hold(guard.shared);
  transaction->add_to_commit({op::Check{node, 0}}, {}, [name = guard.lock->name()] {
    throw LockLost("lock " + name + " was lost before the transaction could commit");
  });
}

}  // namespace avout::detail

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
