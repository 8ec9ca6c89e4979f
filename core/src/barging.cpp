#include "barging.hpp"

#include "node_cache.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <chrono>
#include <future>
#include <thread>
#include <utility>

namespace avout::detail {

namespace {
// Lost replies of releases are settled by reading the tags again, a few times at most.
constexpr int release_rounds = 3;

bool older_and_alive(StmContext& stm, const BargeState& barge,
                     const std::optional<TransactionAge>& owner) {
  // Not dated yet (a speculative attempt, which has no read point of its own): the youngest.
  return owner && (!barge.age || *owner < *barge.age) && stm.runtime().alive(owner->session);
}
}  // namespace

NodeCache::Lookup begin_tag(StmContext& stm, const RefCore& ref) {
  return stm.runtime().nodes().begin(stm.runtime().layout().tag(ref.name()));
}

std::vector<BargeTag> finish_tags(StmContext& stm, const std::vector<std::shared_ptr<RefCore>>& refs,
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

std::vector<BargeTag> read_tags(StmContext& stm, const std::vector<std::shared_ptr<RefCore>>& refs) {
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
      barge.unsure.insert(refs[i]);  // may have gone out: settled from the tag later
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
      barge.unsure.insert(ref);
    }
  }
}

void yield_to_older(StmContext& stm, BargeState& barge,
                    const std::vector<std::shared_ptr<RefCore>>& refs,
                    const std::vector<BargeTag>& tags) {
  // A tag left behind by a stuck (but living) process delays others only for a while.
  if (barge.yields >= stm.runtime().options().barging.yield_limit) return;
  for (std::size_t i = 0; i < refs.size(); ++i) {
    if (older_and_alive(stm, barge, tags[i].owner)) {
      ++barge.yields;
      throw RetryAttempt{"ref " + refs[i]->name() + " is claimed by an older transaction"};
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
  if (!barge_.age) return;
  Pending pending;
  for (const auto& [ref, version] : barge_.held) pending.emplace(ref, version);
  for (const auto& ref : barge_.unsure) pending.emplace(ref, std::nullopt);
  for (int round = 0; round < release_rounds && !pending.empty(); ++round) {
    if (round > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50 * round));
    try {
      resolve(pending);
      release(pending);
    } catch (const Error&) {
      // ZooKeeper unreachable: the next round tries again.
    }
  }
}

// Reads the tags of claims with an unknown outcome: ours stay with their version.
void ClaimRelease::resolve(Pending& pending) {
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
void ClaimRelease::release(Pending& pending) {
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

}  // namespace avout::detail
