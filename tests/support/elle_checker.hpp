#pragma once
// An Elle-style checker of list-append transaction histories with real-time edges (Kingsbury
// and Alvaro, "Elle: inferring isolation anomalies from experimental observations"). Each key
// is a ref holding a list of int64; a transaction appends to keys and reads whole lists.
// Because every appended value is unique, the longest read of a key gives its version
// order, and every read names the transaction it read from: the checker derives ww, wr and
// rw dependency edges between committed transactions, adds real-time edges (one transaction
// completed before another was invoked), and classifies the cycles as Adya/Elle do. Pure
// functions over plain data: the unit test feeds hand-built histories, the randomized test
// the merged histories of its processes (support/history.hpp).

#include "support/history.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace avout::testing::elle {

/// What became of a transaction.
enum class Outcome {
  ok,      ///< committed and acknowledged
  failed,  ///< certainly not committed (aborted, retry limit)
  info     ///< unknown: it may or may not have committed (OutcomeUnknown, a dead process)
};

/// One micro-operation: an append of `value` to `key`, or a read of `key`.
struct MicroOp {
  bool append = false;                                ///< true: append; false: read
  std::string key;                                    ///< the ref
  std::int64_t value = 0;                             ///< the value appended
  std::optional<std::vector<std::int64_t>> observed;  ///< the list a read returned, if known
};

/// One transaction of a history.
struct Transaction {
  std::int64_t id = 0;            ///< unique across the history
  int process = 0;                ///< the client process that ran it
  int thread = 0;                 ///< its thread in that process
  std::int64_t invoked_ns = 0;    ///< when it was invoked (one clock for the whole history)
  std::int64_t completed_ns = 0;  ///< when it returned; 0 when it never did
  Outcome outcome = Outcome::info;
  std::vector<MicroOp> ops;  ///< in program order
  bool final_read = false;   ///< a read of the final state, after every other one ended
};

/// An anomaly found, with the transactions involved (for a cycle: in cycle order).
struct Anomaly {
  std::string kind;  ///< "G0", "G1c", "G-single", "G2" (each also "-realtime"), "G1a",
                     ///< "G1b", "internal", "incompatible-order", "duplicate",
                     ///< "unknown-value", "lost"
  std::vector<std::int64_t> transactions;  ///< ids
  std::string explanation;  ///< what was seen, each transaction shown with its process,
                            ///< thread, times, outcome and micro-operations
};

/// Limits of a check.
struct CheckOptions {
  bool realtime = true;             ///< add real-time edges and look for "-realtime" cycles
  std::size_t per_kind = 5;         ///< report at most this many anomalies of one kind
  std::size_t cycle_budget = 2000;  ///< edges tried as a cycle's start per component and kind
};

/// Every anomaly of `history`. Reads of transactions that did not end ok are not trusted
/// (their values are unknown); the graph's nodes are the ok transactions and the info ones
/// whose appends some read observed. Lost appends are looked for only in keys some
/// final_read transaction read.
std::vector<Anomaly> check(const std::vector<Transaction>& history,
                           const CheckOptions& options = {});

/// The kinds of `anomalies`, each once.
std::set<std::string> kinds(const std::vector<Anomaly>& anomalies);

/// The anomalies, one explanation after another, for a failure message.
std::string describe(const std::vector<Anomaly>& anomalies);

/// The transactions among paired operations (support/history.hpp) whose "f" is `f`:
/// argument {"thread": n, "ops": [["append", key, value] | ["r", key, null], ...], "final":
/// true for a final read (optional)}, result (ok only) the same micro-operations with each
/// read's list in place of its null. The process is the id's (process_of).
std::vector<Transaction> transactions_from(const std::map<std::int64_t, Operation>& operations,
                                           const std::string& f = "txn");

}  // namespace avout::testing::elle
