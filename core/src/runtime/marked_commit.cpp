#include "runtime/marked_commit.hpp"
#include "zk/outcome.hpp"

#include <avout/errors.hpp>

#include <utility>
#include <variant>

namespace avout::detail {

std::chrono::steady_clock::time_point resolution_deadline(const ZooKeeperSession& session) {
  return std::chrono::steady_clock::now() + session.negotiated_timeout() * 3;
}

std::chrono::steady_clock::time_point absence_proves_until(
    std::chrono::steady_clock::time_point sent, std::chrono::milliseconds grace) {
  // The marker, if created, was created after `sent`, and gc removes none younger than the
  // grace on ZooKeeper's clock; half of it leaves room for clocks that do not run alike.
  return sent + grace / 2;
}

std::optional<bool> resolve_commit(ZooKeeperSession& session, const Resolution& resolution,
                                   std::chrono::steady_clock::time_point sent) {
  // One deadline for the whole question (outcome_deadline cuts it short by the caller's).
  const Deadline deadline = Deadline::at(resolution_deadline(session));
  const std::string what = "commit marker " + resolution.marker;
  try {
    if (node_outcome(session, resolution.marker, deadline, what) == Outcome::landed) return true;
    // Answered now at the latest: while gc could not have removed the marker, its absence
    // says the multi was not applied. Past that, only what the multi wrote can tell, and
    // never that it did not land.
    if (std::chrono::steady_clock::now() < absence_proves_until(sent, resolution.grace))
      return false;
    if (!resolution.written_named) return std::nullopt;
    // The heads are read after a sync as the marker was, and silence is asked again the same way.
    if (outcome_of(session, resolution.marker, resolution.written_named, deadline, what) ==
        Outcome::landed) {
      return true;
    }
    return std::nullopt;
  } catch (const Timeout&) {
    // The deadline passed with no answer (ZooKeeper unreachable, or a reply still on its
    // way): the multi may have landed, so the outcome is unknown, never a Timeout.
    return std::nullopt;
  }
}

std::optional<bool> commit_with_marker(ZooKeeperSession& session,
                                       const std::vector<Operation>& operations,
                                       const Resolution& resolution, MultiResult* result) {
  const auto sent = std::chrono::steady_clock::now();
  // Throws SessionExpired, having sent nothing, once the points' session has ended.
  auto pending = resolution.generation ? session.multi_async(operations, *resolution.generation)
                                       : session.multi_async(operations);
  try {
    MultiResult reply = session.wait(pending);
    const bool committed = reply.committed;
    if (result != nullptr) *result = std::move(reply);
    return committed;
  } catch (const ConnectionLoss&) {
    return resolve_commit(session, resolution, sent);
  } catch (const SessionExpired&) {
    return resolve_commit(session, resolution, sent);
  } catch (const Timeout&) {
    return std::nullopt;  // the caller's deadline passed with the multi in flight
  }
}

std::optional<bool> commit_with_cleanup(ZooKeeperSession& session,
                                        std::vector<Operation> operations,
                                        std::size_t first_cleanup, const Resolution& resolution,
                                        MultiResult& result,
                                        const std::function<void(const std::string&)>& gone) {
  while (true) {
    // A lost reply resolved as not landed names no failing op: none from an earlier send.
    result = MultiResult{};
    const std::optional<bool> landed = commit_with_marker(session, operations, resolution, &result);
    if (!landed || *landed || result.failed_index < first_cleanup ||
        result.failed_index >= operations.size()) {
      return landed;
    }
    const auto at = operations.begin() + static_cast<std::ptrdiff_t>(result.failed_index);
    gone(std::get<op::Remove>(*at).path);
    operations.erase(at);
  }
}

}  // namespace avout::detail
