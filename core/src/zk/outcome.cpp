#include "zk/outcome.hpp"
#include "base/back_off.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

Deadline outcome_deadline(const Deadline& caller) {
  const Deadline& replies = ReplyDeadline::current();
  Deadline bound = caller;
  if (replies.time()) bound = bound.no_later_than(*replies.time());
  // A Deadline carries one stop token: the caller's wins, the thread's fills in for none.
  if (!caller.stop_token().stop_possible() && replies.stop_token().stop_possible()) {
    bound = bound.with_stop(replies.stop_token());
  }
  return bound;
}

Outcome outcome_of(ZooKeeperSession& session, const std::string& sync_path,
                   const std::function<bool()>& look, const Deadline& deadline,
                   const std::string& what) {
  const Deadline bound = outcome_deadline(deadline);
  for (std::size_t attempt = 0;; ++attempt) {
    if (bound.expired()) bound.expire(what);
    try {
      // Every wait below (the look's too) ends by the deadline: Timeout, said in our words.
      const ReplyDeadline replies(bound);
      auto synced = session.sync_async(sync_path);
      const bool landed = look();
      // Replies come in request order: the look's answer is in, so is the sync's. A sync that
      // failed makes the answer worthless (it may predate the request).
      session.wait(synced);
      return landed ? Outcome::landed : Outcome::not_landed;
    } catch (const Timeout&) {
      bound.expire(what);
    } catch (const ConnectionLoss&) {
    } catch (const SessionExpired&) {
      // The renewed session answers next (an ephemeral node went with the old one).
    }
    if (!back_off(attempt, bound, outage_pauses)) bound.expire(what);
  }
}

Outcome node_outcome(ZooKeeperSession& session, const std::string& path, const Deadline& deadline,
                     const std::string& what) {
  return outcome_of(
      session, path, [&] { return session.exists(path).has_value(); }, deadline, what);
}

std::optional<std::string> child_outcome(ZooKeeperSession& session, const std::string& folder,
                                         const std::string& prefix, const Deadline& deadline,
                                         const std::string& what) {
  std::optional<std::string> found;
  const auto outcome = outcome_of(
      session, folder,
      [&] {
        found.reset();
        for (const auto& child : session.children(folder)) {
          if (child.starts_with(prefix)) found = join_path(folder, child);
        }
        return found.has_value();
      },
      deadline, what);
  if (outcome == Outcome::not_landed) return std::nullopt;
  return found;
}

}  // namespace avout::detail
