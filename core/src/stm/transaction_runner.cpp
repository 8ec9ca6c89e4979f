// The retry loop of dosync: attempts, back-off, and the barging claims of old transactions.
#include "base/back_off.hpp"
#include "stm/barging.hpp"
#include "stm/transaction.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <optional>
#include <utility>

namespace avout::detail {

namespace {
// One attempt: runs `body` and commits. A RetryAttempt passes on once the refs the attempt
// touched are noted for the next one to read ahead, and its refs claimed when barging is due.
void run_attempt(StmContext& stm, std::vector<std::shared_ptr<RefCore>>& prefetch,
                 BargeState& barge, bool speculate, const std::function<void()>& body) {
  Transaction transaction(stm, prefetch, barge, speculate);
  try {
    transaction.run(body);
  } catch (const RetryAttempt& retry) {
    prefetch = transaction.touched();
    if (!retry.speculation && claim_due(stm.runtime().options().barging, barge)) {
      stm.runtime().metrics().barging_claim();
      try {
        transaction.claim_refs();
      } catch (const Error&) {
        // Claims only speed an old transaction up; the retry goes on without them.
      }
    }
    throw;
  }
}
}  // namespace

void run_transaction(StmContext& stm, const std::function<void()>& body) {
  run_transaction(stm, TransactionSettings{}, body);
}

void run_transaction(StmContext& stm, const Deadline& deadline, const std::function<void()>& body) {
  run_transaction(stm, TransactionSettings{.deadline = deadline}, body);
}

void run_transaction(StmContext& stm, const TransactionSettings& settings,
                     const std::function<void()>& body) {
  const ClientOptions& options = stm.runtime().options();
  const Deadline deadline = settings.deadline.value_or(
      options.operation_timeout ? Deadline::after(*options.operation_timeout) : Deadline{});
  const Isolation isolation = settings.isolation.value_or(options.isolation);
  if (auto* outer = Transaction::current()) {
    if (&outer->stm() != &stm)
      throw Error("dosync: another client's transaction runs on this thread");
    body();
    return;
  }
  const MetricsRecorder& metrics = stm.runtime().metrics();
  const auto started = metrics.start();
  BargeState barge;
  ClaimRelease release(stm, barge);
  // Opened after the claims' release, so it ends before that runs: a release is not cut
  // short by the deadline it outlives.
  const ReplyDeadline bound(deadline);
  std::vector<std::shared_ptr<RefCore>> prefetch;
  // Pauses grow from 1 ms to 50 ms: contending commits take a few ms each.
  const BackOff pauses{std::chrono::milliseconds(1), std::chrono::milliseconds(50)};
  // Only a first attempt speculates: a retry follows a conflict, which speculation would meet.
  bool speculate = isolation == Isolation::serializable && options.speculative_commits &&
                   stm.speculation().try_enter();
  bool ran = false;
  for (std::size_t attempt = 0; attempt < stm.runtime().options().retry_limit;) {
    // Checked between attempts only: a running body and a commit in flight are not cut,
    // and the claims and points of an ended attempt are released by then.
    if (std::exchange(ran, true) && deadline.expired()) {
      throw Timeout("dosync: " + deadline.reason() + " after " + std::to_string(attempt) +
                    " attempts");
    }
    const std::uint64_t generation = stm.runtime().session().generation();
    try {
      metrics.attempt();
      run_attempt(stm, prefetch, barge, std::exchange(speculate, false), body);
      metrics.committed(started);
      return;
    } catch (const RetryAttempt& retry) {
      stm.count_retry(retry.speculation ? RetryCause::speculation : retry.cause);
      if (retry.speculation) {
        stm.speculation().failed();
        // Not an attempt of retry_limit's: the usual first attempt follows at once.
        continue;
      }
      // A claimant (or a dosync that may be one) comes back at once.
      (void)back_off(barge.held.empty() && barge.unsure.empty() ? attempt : 0, deadline, pauses);
    } catch (const Timeout&) {
      // Our deadline cut a wait for ZooKeeper short (a body's own Timeout passes unchanged).
      if (!deadline.expired()) throw;
      throw Timeout("dosync: " + deadline.reason() + " after " + std::to_string(attempt + 1) +
                    " attempts (while waiting for ZooKeeper)");
    } catch (const SessionExpired&) {
      // Only this client's own session ending retries (on the new session it is opening);
      // one the body threw, or another client's, passes through like any body exception.
      if (!stm.runtime().session().ended_since(generation)) throw;
      metrics.retry(RetryCause::session_expired);
      (void)back_off(attempt, deadline, pauses);
    }
    ++attempt;
  }
  throw RetryLimitExceeded("dosync gave up after " +
                           std::to_string(stm.runtime().options().retry_limit) + " attempts");
}

}  // namespace avout::detail
