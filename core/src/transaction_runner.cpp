// The retry loop of dosync: attempts, back-off, and the barging claims of old transactions.
#include "back_off.hpp"
#include "stm.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <map>
#include <optional>

namespace avout::detail {

namespace {

// Ends every claim a dosync still holds when it returns or throws, so younger transactions
// stop yielding at once (a claim left by a dead session is ignored by everyone anyway). A
// claim whose reply was lost is ours exactly when its tag carries our age: read it first.
class ClaimRelease {
 public:
  ClaimRelease(StmContext& stm, BargeState& barge) : stm_(stm), barge_(barge) {}
  ClaimRelease(const ClaimRelease&) = delete;
  ClaimRelease& operator=(const ClaimRelease&) = delete;
  ~ClaimRelease() {
    if (!barge_.age) return;
    Pending pending;
    for (const auto& [ref, version] : barge_.held) pending.emplace(ref, version);
    for (const auto& ref : barge_.unsure) pending.emplace(ref, std::nullopt);
    for (int round = 0; round < release_rounds && !pending.empty(); ++round) {
      if (round > 0) (void)back_off(round - 1, Deadline{}, release_pauses);
      try {
        resolve(pending);
        release(pending);
      } catch (const Error&) {
        // ZooKeeper unreachable: the next round tries again.
      }
    }
  }

 private:
  static constexpr int release_rounds = 3;
  // ZooKeeper may be briefly away: 50 ms, then about 100 ms, before the last round.
  static constexpr BackOff release_pauses{std::chrono::milliseconds(50), std::chrono::milliseconds(100)};
  // ref -> the tag version that carries our age; nullopt: not known yet, read the tag.
  using Pending = std::map<std::shared_ptr<RefCore>, std::optional<std::int32_t>>;

  // Reads the tags of claims with an unknown outcome: ours stay with their version.
  void resolve(Pending& pending) {
    auto& session = stm_.runtime().session();
    std::vector<std::pair<std::shared_ptr<RefCore>, std::future<NodeData>>> reads;
    for (const auto& [ref, version] : pending) {
      if (!version) reads.emplace_back(ref, session.get_async(stm_.runtime().layout().tag(ref->name())));
    }
    for (auto& [ref, reply] : reads) {
      try {
        const NodeData node = session.wait(reply);
        if (decode_tag(node.data, stm_.runtime().layout().tag(ref->name())) == barge_.age) {
          pending[ref] = node.stat.version;
        } else {
          pending.erase(ref);  // the claim never landed, or has ended since
        }
      } catch (const NoNode&) {
        pending.erase(ref);
      } catch (const CodecError&) {
        pending.erase(ref);  // not a claim of ours
      } catch (const Error&) {
        // Unknown still: read again next round.
      }
    }
  }

  // Empties the tags known to carry our age.
  void release(Pending& pending) {
    auto& session = stm_.runtime().session();
    std::vector<std::pair<std::shared_ptr<RefCore>, std::future<NodeStat>>> replies;
    for (const auto& [ref, version] : pending) {
      if (version) replies.emplace_back(ref, session.set_async(stm_.runtime().layout().tag(ref->name()), {}, *version));
    }
    for (auto& [ref, reply] : replies) {
      try {
        session.wait(reply);
        pending.erase(ref);
      } catch (const BadVersion&) {
        pending.erase(ref);  // claimed by someone else meanwhile: nothing of ours is left
      } catch (const NoNode&) {
        pending.erase(ref);
      } catch (const Error&) {
        pending[ref].reset();  // reply lost: read the tag again
      }
    }
  }

  StmContext& stm_;
  BargeState& barge_;
};

}  // namespace

void run_transaction(StmContext& stm, const std::function<void()>& body) {
  const auto& timeout = stm.runtime().options().operation_timeout;
  run_transaction(stm, timeout ? Deadline::after(*timeout) : Deadline{}, body);
}

void run_transaction(StmContext& stm, const Deadline& deadline, const std::function<void()>& body) {
  if (auto* outer = Transaction::current()) {
    if (&outer->stm() != &stm) throw Error("dosync: another client's transaction runs on this thread");
    body();
    return;
  }
  BargeState barge;
  ClaimRelease release(stm, barge);
  std::vector<std::shared_ptr<RefCore>> prefetch;
  // Pauses grow from 1 ms to 50 ms: contending commits take a few ms each.
  const BackOff pauses{std::chrono::milliseconds(1), std::chrono::milliseconds(50)};
  for (std::size_t attempt = 0; attempt < stm.runtime().options().retry_limit; ++attempt) {
    // Checked between attempts only: a running body and a commit in flight are not cut,
    // and the claims and points of an ended attempt are released by then.
    if (attempt > 0 && deadline.expired()) {
      throw Timeout("dosync: " + deadline.reason() + " after " + std::to_string(attempt) +
                    " attempts");
    }
    try {
      Transaction transaction(stm, prefetch, barge);
      try {
        body();
        transaction.commit();
        return;
      } catch (const RetryAttempt&) {
        prefetch = transaction.touched();
        if (++barge.failed_attempts >= stm.runtime().options().barge_after) {
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
      (void)back_off(barge.held.empty() && barge.unsure.empty() ? attempt : 0, deadline, pauses);
    } catch (const SessionExpired&) {
      // The client is opening a new session: try on that one.
      (void)back_off(attempt, deadline, pauses);
    }
  }
  throw RetryLimitExceeded("dosync gave up after " + std::to_string(stm.runtime().options().retry_limit) +
                           " attempts");
}

}  // namespace avout::detail
