#include "stm/barging.hpp"

#include "base/back_off.hpp"
#include "base/callback_executor.hpp"
#include "runtime/node_cache.hpp"
#include "zk/outcome.hpp"

#include <avout/deadline.hpp>
#include <avout/errors.hpp>

#include <algorithm>
#include <chrono>
#include <future>
#include <string>
#include <utility>

namespace avout::detail {

namespace {
bool older_and_alive(StmContext& stm, const BargeState& barge,
                     const std::optional<TransactionAge>& owner) {
  // Not dated yet (a validated attempt, which has no read point of its own): the youngest.
  return owner && (!barge.age || *owner < *barge.age) && stm.runtime().alive(owner->session);
}

// The age of a dosync none of whose attempts took a read point (they were validated): one taken
// now, as rule 2 takes one (a sync, then the clock), so that its claims are dated.
TransactionAge date(StmContext& stm) {
  auto& session = stm.runtime().session();
  const std::string& clock = stm.runtime().layout().stm_clock();
  auto synced = session.sync_async(clock);
  auto stat = session.exists_async(clock);
  const auto found = session.wait(stat);  // replies come in order: the sync's is in too
  session.wait(synced);
  if (!found) throw BackendError("stm clock " + clock + " is missing");
  return stm.new_age(found->mzxid);
}

// A claim of `ref` whose outcome is unknown: the tag's version is no longer the one an earlier
// claim of this dosync left (a claim taken again moves it on), so only reading the tag tells.
void unsure(BargeState& barge, const std::shared_ptr<RefCore>& ref) {
  barge.held.erase(ref);
  barge.unsure.insert(ref);
}

// Claims a dosync has to end: tag path -> the tag version that carries its age; nullopt: not
// known (a lost reply), read the tag.
using Pending = std::map<std::string, std::optional<std::int32_t>>;

// How long a round on the callback thread waits for ZooKeeper: the thread also runs user
// watches and lock-loss callbacks, which a ZooKeeper that stays away must not hold up.
constexpr std::chrono::milliseconds background_round{250};

// Reads the tags of claims with an unknown outcome: ours stay with their version. After a
// sync: a session that reconnected to a follower behind the claim would read the tag as it
// was before, and let a live claim go.
void resolve(ZooKeeperSession& session, const TransactionAge& age, Pending& pending) {
  std::vector<std::string> unknown;
  for (const auto& [path, version] : pending) {
    if (!version) unknown.push_back(path);
  }
  if (unknown.empty()) return;
  auto synced = session.sync_async(unknown.front());
  std::vector<std::future<NodeData>> reads;
  for (const auto& path : unknown) reads.push_back(session.get_async(path));
  session.wait(synced);
  for (std::size_t i = 0; i < unknown.size(); ++i) {
    const std::string& path = unknown[i];
    try {
      const NodeData node = session.wait(reads[i]);
      if (decode_tag(node.data, path) == age) {
        pending[path] = node.stat.version;
      } else {
        pending.erase(path);  // the claim never landed, or has ended since
      }
    } catch (const NoNode&) {
      pending.erase(path);
    } catch (const CodecError&) {
      pending.erase(path);  // not a claim of ours
    } catch (const Error&) {
      // Unknown still: read again next round.
    }
  }
}

// Empties the tags known to carry our age; true when a tag's version had moved on (that
// claim is unknown again, to be read at once).
bool release(ZooKeeperSession& session, Pending& pending) {
  bool moved = false;
  std::vector<std::pair<std::string, std::future<NodeStat>>> replies;
  for (const auto& [path, version] : pending) {
    if (version) replies.emplace_back(path, session.set_async(path, {}, *version));
  }
  for (auto& [path, reply] : replies) {
    try {
      session.wait(reply);
      pending.erase(path);
    } catch (const BadVersion&) {
      // The tag moved on: claimed by someone else meanwhile, or by a claim of ours whose
      // reply was lost. Only the tag tells which: read it again.
      pending[path].reset();
      moved = true;
    } catch (const NoNode&) {
      pending.erase(path);
    } catch (const Error&) {
      pending[path].reset();  // reply lost: read the tag again
    }
  }
  return moved;
}

// One round of resolve and release (and one more for the tags whose version had moved on),
// its waits bounded by `deadline`; true when every claim has ended.
bool settle(ZooKeeperSession& session, const TransactionAge& age, Pending& pending,
            const Deadline& deadline) {
  const ReplyDeadline bound(deadline);  // a reply not in by then: Timeout, read again next round
  try {
    resolve(session, age, pending);
    if (release(session, pending)) {
      resolve(session, age, pending);
      release(session, pending);
    }
  } catch (const Error&) {
    // ZooKeeper unreachable: the next round tries again.
  }
  return pending.empty();
}

// Settles `pending` on the client's callback thread, round after round with outage_pauses
// between them, until it is settled or the session of `generation`, which the claims name,
// has ended: a claimant whose session is gone is ignored by everyone (rule 10), and only an
// expiry or the client's close ends a session, never time alone.
void settle_later(Runtime& runtime, std::uint64_t generation, const TransactionAge& age,
                  Pending pending, std::size_t round) {
  const auto callbacks = runtime.callbacks();
  if (!callbacks) return;  // a bare runtime (tests): what is left ends with the session
  const auto pause =
      std::chrono::ceil<std::chrono::milliseconds>(back_off_pause(round, outage_pauses));
  // The callback thread stops before the runtime goes (Client::~Client), and drops what is
  // still waiting: closing the session ends those claims.
  callbacks->post_after(
      pause, [&runtime, generation, age, pending = std::move(pending), round]() mutable {
        if (runtime.session().ended_since(generation)) return;
        if (settle(runtime.session(), age, pending, Deadline::after(background_round))) return;
        settle_later(runtime, generation, age, std::move(pending), round + 1);
      });
}
}  // namespace

void require_valid(const BargingOptions& options) {
  if (options.after == 0) {
    throw InvalidOption(
        "ClientOptions::barging.after must be at least 1: a dosync claims its refs "
        "after that many failed attempts");
  }
}

NodeCache::Lookup begin_tag(StmContext& stm, const RefCore& ref) {
  return stm.runtime().nodes().begin(stm.runtime().layout().tag(ref.name()));
}

std::vector<BargeTag> finish_tags(StmContext& stm,
                                  const std::vector<std::shared_ptr<RefCore>>& refs,
                                  std::vector<NodeCache::Lookup>& lookups) {
  std::vector<BargeTag> tags;
  for (std::size_t i = 0; i < refs.size(); ++i) {
    const std::string path = stm.runtime().layout().tag(refs[i]->name());
    NodeData node;
    try {
      node = stm.runtime().nodes().finish(lookups[i]);
    } catch (const NoNode&) {
      stm.runtime().session().create_recursive(path);  // a ref made before tags existed
      node = stm.runtime().session().get(path);
    }
    tags.push_back(BargeTag{decode_tag(node.data, path), node.stat.version});
  }
  return tags;
}

std::vector<BargeTag> read_tags(StmContext& stm,
                                const std::vector<std::shared_ptr<RefCore>>& refs) {
  std::vector<NodeCache::Lookup> lookups;
  lookups.reserve(refs.size());
  for (const auto& ref : refs) lookups.push_back(begin_tag(stm, *ref));
  return finish_tags(stm, refs, lookups);
}

bool claim_due(const BargingOptions& options, BargeState& barge) {
  return ++barge.failed_attempts >= options.after && options.enabled;
}

void claim(StmContext& stm, BargeState& barge, const std::vector<std::shared_ptr<RefCore>>& refs) {
  if (refs.empty()) return;
  auto& session = stm.runtime().session();
  if (!barge.age) barge.age = date(stm);
  const std::vector<BargeTag> tags = read_tags(stm, refs);
  std::vector<std::size_t> taken;  // decided before any claim goes out, so none is left unawaited
  for (std::size_t i = 0; i < refs.size(); ++i) {
    // An older live transaction keeps its claim; anything else gives way to ours.
    if (!older_and_alive(stm, barge, tags[i].owner)) taken.push_back(i);
  }
  std::vector<std::pair<std::shared_ptr<RefCore>, std::future<NodeStat>>> claims;
  for (std::size_t i : taken) {
    try {
      claims.emplace_back(refs[i], session.set_async(stm.runtime().layout().tag(refs[i]->name()),
                                                     encode_tag(*barge.age), tags[i].version));
    } catch (const Error&) {
      unsure(barge, refs[i]);  // may have gone out: settled from the tag later
    }
  }
  for (auto& [ref, reply] : claims) {
    try {
      barge.held[ref] = session.wait(reply).version;
      barge.unsure.erase(ref);
    } catch (const BadVersion&) {
      // Another transaction claimed it in between: the next attempt reads who.
    } catch (const Error&) {
      // The claim may have been applied (a lost reply): resolved from the tag later.
      unsure(barge, ref);
    }
  }
}

void yield_to_older(StmContext& stm, BargeState& barge,
                    const std::vector<std::shared_ptr<RefCore>>& refs,
                    const std::vector<BargeTag>& tags,
                    const std::vector<NodeCache::Lookup>& lookups) {
  // A tag left behind by a stuck (but living) process delays others only for a while.
  if (barge.yields >= stm.runtime().options().barging.yield_limit) return;
  for (std::size_t i = 0; i < refs.size(); ++i) {
    if (older_and_alive(stm, barge, tags[i].owner)) {
      ++barge.yields;
      // Retrying before the claimant's commit (or release) moves the tag would only find it
      // claimed again: wait for the tag's watch instead of spinning on reads and stores.
      (void)stm.runtime().nodes().wait_moved(lookups[i],
                                             outcome_deadline(Deadline::after(yield_wait_cap)));
      RetryAttempt retry{"ref " + refs[i]->name() + " is claimed by an older transaction",
                         RetryCause::barging_yield};
      retry.waited = true;
      throw retry;
    }
  }
}

std::vector<Operation> tag_operations(StmContext& stm, const BargeState& barge,
                                      const std::vector<std::shared_ptr<RefCore>>& refs,
                                      const std::vector<BargeTag>& tags,
                                      std::vector<std::shared_ptr<RefCore>>& released) {
  std::vector<Operation> operations;
  for (std::size_t i = 0; i < refs.size(); ++i) {
    const std::string path = stm.runtime().layout().tag(refs[i]->name());
    if (tags[i].owner && barge.age && *tags[i].owner == *barge.age) {
      operations.push_back(op::SetData{path, {}, tags[i].version});  // our claim ends here
      released.push_back(refs[i]);
    } else {
      operations.push_back(op::Check{path, tags[i].version});
    }
  }
  return operations;
}

void forget_claims(BargeState& barge, const std::vector<std::shared_ptr<RefCore>>& released) {
  for (const auto& ref : released) {
    barge.held.erase(ref);
    barge.unsure.erase(ref);
  }
}

ClaimRelease::~ClaimRelease() {
  if (!barge_.age || (barge_.held.empty() && barge_.unsure.empty())) return;  // nothing claimed
  Runtime& runtime = stm_.runtime();
  auto& session = runtime.session();
  // Read before the session id: a renewal in between shows as the generation's end.
  const std::uint64_t generation = session.generation();
  // Claims made on a session that has ended since are everyone's to ignore.
  if (session.session_id() != barge_.age->session || session.ended_since(generation)) return;
  Pending pending;
  for (const auto& [ref, version] : barge_.held)
    pending.emplace(runtime.layout().tag(ref->name()), version);
  for (const auto& ref : barge_.unsure)
    pending.emplace(runtime.layout().tag(ref->name()), std::nullopt);
  if (settle(session, *barge_.age, pending, Deadline{})) return;
  settle_later(runtime, generation, *barge_.age, std::move(pending), 0);
}

}  // namespace avout::detail
