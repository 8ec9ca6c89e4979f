#pragma once
// "Did my request land?", asked once for every caller: a write whose reply was lost (or came
// too late) may or may not have been applied, and only an answer read after a sync tells.
// The module sends a sync, then the caller's look (reads on the same session travel behind
// the sync, so their answers are at least as new as every write before it), and judges from
// that answer alone: silence (a lost connection, an expired session, no reply) is never
// taken for "absent"; it pauses with the one back-off and asks again, until one deadline:
// the caller's, cut short by this thread's ReplyDeadline.

#include <avout/deadline.hpp>
#include <avout/zookeeper_session.hpp>

#include <functional>
#include <optional>
#include <string>

namespace avout::detail {

/// What an answer read after a sync says of a request.
enum class Outcome { landed, not_landed };

/// The one deadline rule of outcome questions: `caller`, expiring no later than this thread's
/// ReplyDeadline (whose stop token is taken when `caller` has none that can stop).
Deadline outcome_deadline(const Deadline& caller);

/// Whether the request `what` names landed. `look` runs right after a sync of `sync_path` was
/// sent and reads (synchronously, on `session`) what the request would have written: true for
/// landed. ConnectionLoss and SessionExpired (from the sync or the look) mean "no answer":
/// asked again after a pause. Throws Timeout ("<what>: deadline passed") once
/// outcome_deadline(deadline) expires: for a read-only question; a caller whose write is in
/// doubt relabels it OutcomeUnknown. Other errors of `look` (NoNode of a folder...) propagate.
Outcome outcome_of(ZooKeeperSession& session, const std::string& sync_path,
                   const std::function<bool()>& look, const Deadline& deadline,
                   const std::string& what);

/// Whether a node is at `path`, read after a sync (outcome_of with an exists look).
Outcome node_outcome(ZooKeeperSession& session, const std::string& path, const Deadline& deadline,
                     const std::string& what);

/// The child of `folder` whose name starts with `prefix` (a protected create's unique prefix),
/// read after a sync; nullopt when the listing shows none (outcome_of's rules otherwise).
std::optional<std::string> child_outcome(ZooKeeperSession& session, const std::string& folder,
                                         const std::string& prefix, const Deadline& deadline,
                                         const std::string& what);

}  // namespace avout::detail
