#include "queue/sequential_queue.hpp"
#include "base/back_off.hpp"
#include "zk/outcome.hpp"

#include <avout/errors.hpp>

#include <memory>

namespace avout::detail {

namespace {

// The reply of `request` by `bound` (outcome_deadline: it includes the thread's ReplyDeadline);
// nullopt once it passed, the request left in flight.
template <typename T>
std::optional<T> reply_by(const ZooKeeperSession& session, std::future<T> request,
                          const Deadline& bound) {
  return session.wait(request.share(), bound);
}

}  // namespace

SequentialQueue::SequentialQueue(ZooKeeperSession& session, std::string folder, NodeKind kind,
                                 CreateMode mode)
    : session_(session), folder_(std::move(folder)), kind_(std::move(kind)), mode_(mode) {}

std::string SequentialQueue::fresh_prefix(std::string_view mark) const {
  return detail::fresh_prefix(kind_, mark);
}

op::Create SequentialQueue::create_op(const std::string& prefix, Bytes data) const {
  return op::Create{join_path(folder_, prefix), std::move(data), mode_};
}

std::optional<std::string> SequentialQueue::create(const std::string& prefix, const Bytes& data,
                                                   const Deadline& deadline,
                                                   const std::function<bool()>& may_create) {
  const Deadline bound = outcome_deadline(deadline);
  // The session a create went out on: an ephemeral node made there is gone once it ended,
  // so only a persistent one (or one on a living session) needs looking for.
  std::optional<std::uint64_t> sent_in;
  for (std::size_t attempt = 0;; ++attempt) {
    if (bound.expired() && !sent_in) return std::nullopt;  // nothing sent, nothing to undo
    try {
      const bool may_live = mode_ == CreateMode::persistent_sequential ||
                            (sent_in && *sent_in == session_.generation());
      if (sent_in && may_live) {
        if (auto found = find(prefix, bound)) return found;
      }
      if (may_create && !may_create()) return std::nullopt;
      sent_in = session_.generation();
      const auto made = create_op(prefix, data);
      return reply_by(session_, session_.create_async(made.path, made.data, mode_), bound);
    } catch (const Timeout&) {
      return std::nullopt;  // find() ran out of time: the create's outcome is unknown
    } catch (const ConnectionLoss&) {
    } catch (const SessionExpired&) {
    }
    if (!back_off(attempt, bound, outage_pauses)) return std::nullopt;
  }
}

std::optional<std::string> SequentialQueue::find(const std::string& prefix,
                                                 const Deadline& deadline) {
  return child_outcome(session_, folder_, prefix, deadline,
                       "queue " + folder_ + ": looking for node " + prefix + "*");
}

std::optional<std::vector<std::string>> SequentialQueue::list(const Deadline& deadline,
                                                              WatchCallback watch,
                                                              Freshness freshness) {
  auto children = synced_children(outcome_deadline(deadline), std::move(watch), freshness);
  if (!children) return std::nullopt;
  return in_queue_order(std::move(*children), kind_);
}

std::optional<std::vector<std::string>> SequentialQueue::synced_children(const Deadline& bound,
                                                                         WatchCallback watch,
                                                                         Freshness freshness) {
  // Replies come in request order: once the listing is in, so is the sync's answer.
  std::optional<std::future<void>> synced;
  if (freshness == Freshness::after_sync) synced = session_.sync_async(folder_);
  auto listed = reply_by(session_, session_.children_async(folder_, std::move(watch)), bound);
  if (!listed) return std::nullopt;
  if (synced) session_.wait(*synced);
  return listed;
}

std::optional<Turn> SequentialQueue::turn(const std::string& own, const HoldRule& rule,
                                          WatchCallback wake, const Deadline& deadline) {
  const Deadline bound = outcome_deadline(deadline);
  // The sync makes the listing at least as new as our own create.
  auto children = synced_children(bound, {});
  if (!children) return std::nullopt;
  return turn_in(std::move(*children), own, rule, std::move(wake), bound);
}

std::optional<Turn> SequentialQueue::turn_in(std::vector<std::string> children,
                                             const std::string& own, const HoldRule& rule,
                                             WatchCallback wake, const Deadline& deadline) {
  const Deadline bound = outcome_deadline(deadline);
  Turn turn = turn_among(std::move(children), own, kind_, rule);
  // Every watch goes out before the first reply is awaited: one round trip for them all.
  std::vector<std::future<std::optional<NodeStat>>> watched;
  for (const auto& name : turn.watch) {
    watched.push_back(session_.exists_async(join_path(folder_, name), wake));
  }
  bool all_there = true;
  for (auto& reply : watched) {
    const auto stat = reply_by(session_, std::move(reply), bound);
    if (!stat) return std::nullopt;
    all_there = all_there && stat->has_value();
  }
  if (!all_there) turn.watch.clear();  // one is gone already: look again now
  return turn;
}

std::optional<bool> SequentialQueue::release(const std::string& path, std::int32_t version,
                                             const Deadline& deadline) {
  const Deadline bound = outcome_deadline(deadline);
  try {
    auto removed = session_.remove_async(path, version);
    const ReplyDeadline replies(bound);  // a void reply: the thread's bound cuts the wait
    session_.wait(removed);
    return true;
  } catch (const Timeout&) {
    if (bound.expired()) return std::nullopt;
    throw;
  } catch (const NoNode&) {
    return false;
  } catch (const SessionExpired&) {
    if (mode_ == CreateMode::ephemeral_sequential) return false;
    throw;
  }
}

}  // namespace avout::detail
