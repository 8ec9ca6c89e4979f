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
// One attempt: runs `body` and commits; true when it wrote. A RetryAttempt passes on once the
// refs the attempt touched are noted for the next one to read ahead, and its refs claimed
// when barging is due.
bool run_attempt(StmContext& stm, std::vector<std::shared_ptr<RefCore>>& prefetch,
                 BargeState& barge, AttemptKind kind, const std::function<void()>& body) {
  Transaction transaction(stm, prefetch, barge, kind);
  try {
    transaction.run(body);
    return transaction.wrote();
  } catch (const RetryAttempt&) {
    prefetch = transaction.touched();
    if (claim_due(stm.runtime().options().barging, barge)) {
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

// V1: how the next attempt of a serializable dosync reads. Synced when this thread's previous
// dosync wrote nothing (a read-only one is predicted: it keeps one round trip, with no
// confirmation), when a validated attempt's confirmation failed (V5), or after two validated
// attempts in a row found their view changed (V3: a long read under steady commits would
// never hold one view; a synced one reads history instead); else validated.
AttemptKind serializable_kind(StmContext& stm, bool unsettled) {
  return unsettled || stm.predicts_read_only() ? AttemptKind::synced : AttemptKind::validated;
}

// Validated attempts in a row whose view changed after which the next one runs synced.
constexpr std::size_t views_changed_limit = 2;
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
  const bool serializable = isolation == Isolation::serializable;
  // Snapshot: pauses grow from 1 ms to 50 ms (contending commits take a few ms each). V7,
  // serializable: the first conflict in a row retries at once, later ones pause 0.25 ms
  // doubling to 8 ms (jittered: back_off_pause); a validated retry is cheap, and the failed
  // multi's watch events and V6's prefetch have brought the heads it needs.
  const BackOff pauses =
      serializable ? BackOff{std::chrono::microseconds(250), std::chrono::milliseconds(8)}
                   : BackOff{std::chrono::milliseconds(1), std::chrono::milliseconds(50)};
  bool confirmation_failed = false;
  std::size_t views_changed = 0;  // V3 failures in a row
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
      const AttemptKind kind = serializable
                                   ? serializable_kind(stm, std::exchange(confirmation_failed, false) ||
                                                                views_changed >= views_changed_limit)
                                   : AttemptKind::snapshot;
      const bool wrote = run_attempt(stm, prefetch, barge, kind, body);
      stm.note_dosync(wrote);
      metrics.committed(started);
      return;
    } catch (const RetryAttempt& retry) {
      stm.count_retry(retry.cause);
      confirmation_failed = retry.cause == RetryCause::confirmation;
      views_changed = retry.cause == RetryCause::view_changed ? views_changed + 1 : 0;
      // A claimant (or a dosync that may be one) comes back at once; so does a serializable
      // dosync's first conflict (V7), and a yield that waited for its claimant's tag to move
      // (yield_to_older: that wait was the pause).
      const bool claimant = !barge.held.empty() || !barge.unsure.empty();
      if (retry.waited) {
        // no pause on top
      } else if (!serializable) {
        (void)back_off(claimant ? 0 : attempt, deadline, pauses);
      } else if (!claimant && attempt > 0) {
        (void)back_off(attempt - 1, deadline, pauses);
      }
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
