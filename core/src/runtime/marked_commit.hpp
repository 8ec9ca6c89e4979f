#pragma once
// A commit multi marked by its op 0, and what tells whether one whose reply was lost landed
// (docs/transactions.md rules 2, 6, 16). Below the engines: transactions, agents and the
// pending markers (rule 16) send their commits through it.

#include <avout/zookeeper_session.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace avout::detail {

/// How a commit multi is sent, and what tells whether one whose reply was lost landed
/// (docs/transactions.md rules 2, 6).
struct Resolution {
  std::string marker;               ///< created by the multi's op 0: present exactly when it landed
  std::chrono::milliseconds grace;  ///< ClientOptions::marker_grace: gc leaves younger markers
  /// Asked once the marker's absence proves nothing (gc may have removed it), after a sync:
  /// true when a head the multi set names a point it wrote, so it landed. Empty: nothing does.
  std::function<bool()> written_named = {};
  /// The session generation the multi's points were written on: the multi goes out on that
  /// session or not at all (SessionExpired, nothing sent; gc may see their writer dead).
  std::optional<std::uint64_t> generation = std::nullopt;
};

/// Until when an answer that a commit's marker is absent proves the commit, sent at `sent`,
/// did not land: half the grace within which gc leaves markers alone (rule 6), judged on this
/// process's steady clock, as gc judges their age on ZooKeeper's.
std::chrono::steady_clock::time_point absence_proves_until(
    std::chrono::steady_clock::time_point sent, std::chrono::milliseconds grace);

/// A definite "did it land?" for a multi sent at `sent` whose reply was lost (rule 6), asked
/// through the outcome module (zk/outcome.hpp): true when its marker is found, or later a
/// head names what it wrote; false when the marker is absent while that proves it
/// (absence_proves_until); nullopt when neither can be told, or no answer comes before
/// resolution_deadline (cut short by the thread's ReplyDeadline). Never throws Timeout.
std::optional<bool> resolve_commit(ZooKeeperSession& session, const Resolution& resolution,
                                   std::chrono::steady_clock::time_point sent);

/// How long an owner keeps trying to find out what became of a request whose reply was lost
/// (resolving a commit, locating or settling an agent's send): three of the session timeouts
/// the server granted, after which it has expired a session that stayed away, and its
/// ephemeral nodes with it.
std::chrono::steady_clock::time_point resolution_deadline(const ZooKeeperSession& session);

/// Sends a multi whose op 0 creates `resolution.marker`: true when it was applied, false when
/// an operation failed (`result` tells which), nullopt when the outcome stayed unknown. A lost
/// reply is resolved (resolve_commit), never by sending the multi again. SessionExpired: the
/// session of `resolution.generation` has ended and nothing was sent.
std::optional<bool> commit_with_marker(ZooKeeperSession& session,
                                       const std::vector<Operation>& operations,
                                       const Resolution& resolution, MultiResult* result = nullptr);

/// commit_with_marker for a multi whose operations from `first_cleanup` on are clean-up
/// (rule 16): removals at version 0 of nodes that may be gone already (earlier commits'
/// markers, trimmed ZooKeeper-held values). A failing one is no conflict (ZooKeeper reports
/// the first failing op, so every op before it succeeded): `gone` hears its path and the
/// multi goes again without it; nothing else is retried. `result` tells a failure's op.
std::optional<bool> commit_with_cleanup(ZooKeeperSession& session,
                                        std::vector<Operation> operations,
                                        std::size_t first_cleanup, const Resolution& resolution,
                                        MultiResult& result,
                                        const std::function<void(const std::string&)>& gone);

}  // namespace avout::detail
