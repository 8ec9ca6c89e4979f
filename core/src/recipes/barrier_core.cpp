// BarrierCore: opening a barrier (its folder, count and round) and reading its state.
#include "recipes/barrier_core.hpp"
#include "base/back_off.hpp"
#include "queue/node_removals.hpp"
#include "recipes/barrier_names.hpp"
#include "recipes/claim_record.hpp"
#include "zk/outcome.hpp"

#include <avout/errors.hpp>

#include <algorithm>

namespace avout::detail {

BarrierCore::BarrierCore(ZooKeeperSession& session, std::shared_ptr<NodeRemovals> removals,
                         std::string name, std::string folder, std::size_t n)
    : session_(session),
      removals_(std::move(removals)),
      name_(std::move(name)),
      folder_(std::move(folder)),
      n_(n),
      queue_(session, folder_, participant_kind(), CreateMode::ephemeral_sequential) {
  session_.create_recursive(folder_);
  claim_count();
  removals_->start();
  // A renewed session took this participant's node: its waits look again at once.
  listener_ = session_.add_listener([wake = wake_](SessionState) { wake->bump(); });
}

BarrierCore::~BarrierCore() {
  session_.remove_listener(listener_);
  release_node();  // a participant dropped between enter and leave: others see it died
}

void BarrierCore::release_node() noexcept {
  // Not confirmed within the grace (a lost reply, an outage): left in a live session the
  // node would count in a later round, so the removals send the delete again.
  if (node_) (void)removals_->remove_now(queue_, *node_, generation_, grace());
}

void BarrierCore::claim_count() {
  // The count is the barrier's, not the handle's: recorded with an open round.
  claim_record(
      session_, folder_, encode_record(BarrierRecord{n_, {}}),
      [&](const Bytes& data) {
        const auto record = decode_record(data, folder_);
        if (record.participants == n_) return;
        throw Mismatch("barrier " + name_ + ": opened with " + std::to_string(n_) +
                       " participants, but it was created with " +
                       std::to_string(record.participants));
      },
      "barrier " + name_ + ": recording the participant count");
}

std::optional<BarrierCore::Snapshot> BarrierCore::look(const Deadline& deadline) {
  const Deadline bound = outcome_deadline(deadline);
  for (std::size_t attempt = 0;; ++attempt) {
    try {
      // Replies come in request order, every read at least as new as the writes before the
      // sync. The record is read before and after the listing: the same version both times
      // means the listing shows the folder while that round stood (a member gone without its
      // record then is a death, not a completed round's cleanup). The first read's watch
      // wakes us on any later change.
      auto synced = session_.sync_async(folder_);
      auto before =
          session_.get_async(folder_, [wake = wake_](const WatchEvent&) { wake->bump(); }).share();
      auto listed = session_.children_async(folder_).share();
      auto after = session_.get_async(folder_).share();
      const auto first = session_.wait(before, bound);
      if (!first) return std::nullopt;
      auto children = session_.wait(listed, bound);
      if (!children) return std::nullopt;
      const auto second = session_.wait(after, bound);
      if (!second) return std::nullopt;
      session_.wait(synced);
      if (first->stat.version == second->stat.version) {
        return Snapshot{std::move(*children), decode_record(second->data, folder_).round,
                        second->stat.version};
      }
      continue;  // the round changed meanwhile: look again at once
    } catch (const ConnectionLoss&) {
    } catch (const SessionExpired&) {  // the renewed session answers next
    }
    if (!back_off(attempt, bound, outage_pauses)) return std::nullopt;
  }
}

bool BarrierCore::member(const BarrierRound& round) const {
  return round.closed && node_ &&
         std::find(round.members.begin(), round.members.end(), mine()) != round.members.end();
}

std::string BarrierCore::mine() const { return node_ ? name_of(*node_) : std::string(); }

Deadline BarrierCore::grace() const {
  // Undoing a step after the caller's deadline (a withdrawal, a release) gets one session
  // timeout: past it the server may have ended the session, taking the node with it.
  return Deadline::after(session_.negotiated_timeout());
}

}  // namespace avout::detail
