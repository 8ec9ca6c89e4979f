// The retry loop of dosync: attempts, back-off, and the barging claims of old transactions.
#include "barging.hpp"

#include <avout/detail/stm.hpp>
#include <avout/errors.hpp>

#include <algorithm>
#include <optional>
#include <random>
#include <thread>

namespace avout::detail {

namespace {

void back_off(std::size_t attempt) {
  // Random, growing pauses spread contending retries apart (capped at about 50 ms).
  thread_local std::minstd_rand random{std::random_device{}()};
  const auto cap = std::min<std::size_t>(50, 1 + attempt * 2);
  std::this_thread::sleep_for(std::chrono::microseconds(random() % (cap * 1000)));
}

}  // namespace

void run_transaction(StmContext& stm, const std::function<void()>& body) {
  if (auto* outer = Transaction::current()) {
    if (&outer->stm() != &stm) throw Error("dosync: another client's transaction runs on this thread");
    body();
    return;
  }
  BargeState barge;
  ClaimRelease release(stm, barge);
  std::vector<std::shared_ptr<RefCore>> prefetch;
  for (std::size_t attempt = 0; attempt < stm.options().retry_limit; ++attempt) {
    try {
      Transaction transaction(stm, prefetch, barge);
      try {
        body();
        transaction.commit();
        return;
      } catch (const RetryAttempt&) {
        prefetch = transaction.touched();
        if (claim_due(stm.options(), barge)) {
          try {
            transaction.claim_refs();
          } catch (const Error&) {
            // Claims only speed an old transaction up; the retry goes on without them.
          }
        }
        throw;
      }
    } catch (const RetryAttempt&) {
      stm.count_retry();
      // A claimant (or a dosync that may be one) comes back at once.
      back_off(barge.held.empty() && barge.unsure.empty() ? attempt : 0);
    } catch (const SessionExpired&) {
      back_off(attempt);  // the client is opening a new session: try on that one
    }
  }
  throw RetryLimitExceeded("dosync gave up after " + std::to_string(stm.options().retry_limit) +
                           " attempts");
}

}  // namespace avout::detail
