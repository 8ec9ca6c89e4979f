#pragma once
// Operation histories of multi-process tests, and the checkers that judge them.
//
// Format: one JSON object per line, one file per process, written as operations happen:
//   {"process": 3, "type": "invoke", "f": "transfer", "id": 3000017, "time_ns": 123,
//    "value": {"from": 4, "to": 9, "amount": 12}}
//   {"process": 3, "type": "ok", "f": "transfer", "id": 3000017, "time_ns": 456, "value": null}
// "type" is "invoke" (the call started), "ok" (it returned success), "fail" (it certainly
// did not take effect) or "info" (its outcome is unknown: a connection was lost). "time_ns"
// is CLOCK_MONOTONIC, one clock for every process of the machine. "id" is unique per
// operation across processes; "value" is the operation's argument (invoke) or result (ok).
// Transactions for the Elle-style checker use "f": "txn" (support/elle_checker.hpp says how).

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace avout::testing {

/// CLOCK_MONOTONIC in nanoseconds.
std::int64_t monotonic_ns();

/// Appends one process's operations to `path` (flushed per line: a SIGKILL loses nothing
/// already written).
class HistoryWriter {
 public:
  HistoryWriter(const std::string& path, int process);
  /// Records one event of operation `id`.
  void record(const std::string& type, const std::string& f, std::int64_t id,
              const nlohmann::json& value = nullptr);

 private:
  std::ofstream out_;
  int process_;
};

/// The process an operation id of SharedHistory belongs to (ids are process * 1000000 + n).
inline int process_of(std::int64_t id) { return static_cast<int>(id / 1000000); }

/// One process's history shared by its threads: the writer behind a mutex, and the ids of
/// the process's operations (process * 1000000 + n: unique across processes).
class SharedHistory {
 public:
  /// Appends to `path` as process `process`; its ids start at process * 1000000.
  SharedHistory(const std::string& path, int process);
  /// The id of the process's next operation.
  std::int64_t next_id() { return next_++; }
  /// Records one event of operation `id`; thread safe.
  void record(const std::string& type, const std::string& f, std::int64_t id,
              const nlohmann::json& value = nullptr);

 private:
  std::mutex mutex_;
  HistoryWriter writer_;
  std::atomic<std::int64_t> next_;
};

/// Every event of every history file in `directory`.
std::vector<nlohmann::json> read_histories(const std::string& directory);

/// One operation: its invoke and its completion (type "ok", "fail" or "info"; "info" also
/// when the process died before completing it).
struct Operation {
  std::int64_t id = 0;
  std::string f;
  std::string outcome;
  std::int64_t invoked_ns = 0;
  std::int64_t completed_ns = 0;  ///< 0 when it never completed
  nlohmann::json argument;
  nlohmann::json result;
};

/// Pairs invokes with completions, by id.
std::map<std::int64_t, Operation> pair_operations(const std::vector<nlohmann::json>& events);

/// Checks increments of a counter atom ("f": "increment", result: the new value) against a
/// linearizable counter: acknowledged values are distinct, at most `final_value`, at least as
/// many as acknowledged and no more than acknowledged plus unknown, and real-time ordered (an
/// increment that completed before another was invoked returned a smaller value). Returns
/// the problems found (empty: linearizable).
std::vector<std::string> check_counter(const std::map<std::int64_t, Operation>& operations,
                                       long final_value);

/// Checks bank transfers ("f": "transfer", argument {from, to, amount}) and audits ("f":
/// "audit", result: the total seen): every acknowledged transfer is in the ledgers (the ids
/// the transactions themselves recorded), no id is recorded twice, no failed one is
/// recorded, replaying the recorded transfers from `initial` gives exactly `balances`, and
/// every audit saw the unchanged total.
std::vector<std::string> check_bank(const std::map<std::int64_t, Operation>& operations,
                                    const std::vector<long>& ledger_ids,
                                    const std::vector<long>& balances, long initial);

}  // namespace avout::testing
