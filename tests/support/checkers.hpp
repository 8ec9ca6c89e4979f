#pragma once
// Checkers of the randomized workload's histories (support/history.hpp format). Each returns
// the anomalies found, each naming the operations involved; empty means none.

#include "support/history.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace avout::testing {

/// Elle's list-append check of transactions ("f": "txn"). Argument and result: a list of
/// micro-operations ["append", key, value] and ["r", key, list-or-null] in program order
/// (the result fills the reads). `final_lists` is each key's list read after the run.
/// Finds: duplicate or lost acknowledged appends, reads that are no prefix of the final
/// list, internal inconsistency (a read that misses the transaction's own earlier appends),
/// G1a (read of a failed transaction's append), G1b (read of an intermediate state), and
/// cycles of ww/wr edges (G0, G1c), with one rw edge (G-single), and with several rw edges
/// all from reads the readers ensured (G2 among transactions that ensure what they read: a
/// read micro-operation ["r", key, list, "ensure"]). Plain reads outside
/// transactions ("f": "ref-read", argument {"key"}, result the list; "fail" when the value
/// the head named was missing) must be prefixes of the final list and never fail; no
/// transaction fails with a value "missing from its store" or at the clock's version.
std::vector<std::string> check_list_append(
    const std::map<std::int64_t, Operation>& operations,
    const std::map<std::string, std::vector<long>>& final_lists);

/// Atoms as append-only lists ("f": "atom-append", argument {"atom", "value"}, result the
/// list after the swap; "f": "atom-cas", argument {"atom", "value"}, result true/false;
/// "f": "atom-read", argument {"atom"}, result the list): every acknowledged append present
/// exactly once, unknown ones at most once, failed ones never; every list seen is a prefix
/// of the final one; real-time order (an append that completed before another began comes
/// first: the appends are linearizable; a read contains what its own process completed
/// before it began, since plain reads may come from a lagging follower).
std::vector<std::string> check_atoms(const std::map<std::int64_t, Operation>& operations,
                                     const std::map<std::string, std::vector<long>>& final_lists);

/// Locks ("f": "hold", argument {"lock", "side": "write"|"read"}, result {"token", "entered_ns",
/// "left_ns"} when the hold was still confirmed just before leaving): no write hold overlaps
/// another hold of the same lock, and tokens strictly increase along holds that follow one
/// another in real time.
std::vector<std::string> check_locks(const std::map<std::int64_t, Operation>& operations);

/// Lock-guarded counters ("f": "increment", argument {"lock", "token"}, result {"count"}: the
/// count the holder wrote; "fail" when the counter refused its stale token): per lock, the
/// acknowledged counts are distinct and the final count lies between the acknowledged
/// increments and those plus the unknown ones (a lost increment shows two holders at once).
std::vector<std::string> check_counters(const std::map<std::int64_t, Operation>& operations,
                                        const std::map<std::string, long>& final_counts);

/// Agents ("f": "send" and "txn-send", argument {"agent", "value", "thread"}): in the agent's
/// final list every acknowledged send appears exactly once, unknown ones at most once, failed
/// ones (and sends of failed transactions) never, one thread's sends in its order, and every
/// final "await" (argument {"agent"}, result: await_for's answer) true; a process vouches for
/// an agent when its await of it returned true. Actions that send to another agent ("f":
/// "action-send", argument {"agent": that agent, "value", "failed": thrown on purpose}), the
/// note of an action that threw, which may have run again and not failed in the end ("f":
/// "action-failed", argument {"value"}), and restarts of the agent they fail ("f":
/// "agent-restart", argument {"failed_by": the value the cleared error names}): the send of an
/// action thrown on purpose or named by a cleared error never runs; one whose action never
/// threw runs at most once, and exactly once when its process vouched for both agents ("relay"
/// and the target) and no failure's drop window (from the failing send's invoke to the end of
/// the first restart that cleared its error) overlaps it.
std::vector<std::string> check_agents(const std::map<std::int64_t, Operation>& operations,
                                      const std::map<std::string, std::vector<long>>& final_lists);

/// Plain agent reads and awaits while others send ("f": "agent-read", argument {"agent"},
/// result the list; "fail" when it threw BackendError for a value missing from its store;
/// "f": "agent-handle", a new handle or
/// set_validator, "fail" likewise; "f": "await-mid", result {"waited": the ids of the
/// process's sends that had returned before the await began, "seen": the list read right
/// after it returned, or "read_error"}): no read fails (agent.hpp: a value erased under a
/// newer head is re-read, never BackendError), every list read is a prefix of the agent's
/// final list (a value the agent held), and an await returned only after every send made
/// before it that ran at all had run.
std::vector<std::string> check_agent_reads(
    const std::map<std::int64_t, Operation>& operations,
    const std::map<std::string, std::vector<long>>& final_lists);

/// The register atom, changed only by reset ("f": "register-reset", argument {"value"}, the
/// value set being [value]; result {"old": the value before it, from reset_vals, or null}):
/// resets are linearizable writes, so no two acknowledged resets replaced the same value, a
/// value replaced is the initial [] or one some reset set, a failed reset's value is never
/// seen, and the final value is [] or some reset's that did not fail.
std::vector<std::string> check_register(const std::map<std::int64_t, Operation>& operations,
                                        const std::vector<long>& final_value);

/// Promises a workload thread saw broken inline ("f": "contract", result {"broken": the
/// promise, "detail"}): each one is an anomaly.
std::vector<std::string> check_contracts(const std::map<std::int64_t, Operation>& operations);

/// Watches ("f": "watch-last", argument {"atom"}, result the last list the process's watch
/// saw): each equals the final list.
std::vector<std::string> check_watches(const std::map<std::int64_t, Operation>& operations,
                                       const std::map<std::string, std::vector<long>>& final_lists);

/// A barging claim still in a ref's tag once every dosync of its process had ended: the
/// ref, the process and the age it names (session, first read point, counter).
struct ClaimLeft {
  std::string ref;
  int process = 0;
  std::int64_t session = 0;
  std::int64_t first_read_point = 0;
  std::uint64_t counter = 0;
};

/// Claims end with their dosync (transactions.md rule 10; issue 36 item 3): every claim
/// still left `after` the last dosync of its (live) process ended is an anomaly.
std::vector<std::string> check_claims(const std::vector<ClaimLeft>& claims,
                                      std::chrono::milliseconds after);

}  // namespace avout::testing
