#pragma once
// The type-independent half of an atom: reads and compare-and-sets of its envelope, the
// resolution of a compare-and-set whose reply was lost, and cross-process watches.

#include <avout/backend.hpp>
#include <avout/deadline.hpp>
#include <avout/detail/value_watcher.hpp>
#include <avout/zookeeper_session.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace avout::detail {

/// What an atom keeps in its store: the value's bytes and the ids of its latest writers,
/// so a writer whose reply was lost can tell whether its write landed.
struct AtomEnvelope {
  std::uint64_t sequence = 0;                 ///< number of writes so far (0: never written)
  std::vector<std::uint64_t> recent_writers;  ///< ids of the last writes, oldest first
  Bytes payload;                              ///< the encoded value
};

/// How many writer ids an envelope keeps.
inline constexpr std::size_t kept_writers = 8;

/// Encodes an envelope (a version byte, sequence, writer ids, payload).
Bytes encode_envelope(const AtomEnvelope& envelope);
/// Decodes an envelope; CodecError naming `name` when the bytes are not one.
AtomEnvelope decode_envelope(const Bytes& bytes, const std::string& name);

/// A stored value as read: the store's version and the decoded envelope.
struct AtomSnapshot {
  Versioned stored;       ///< bytes and store version
  AtomEnvelope envelope;  ///< decoded from stored.value (empty when absent)
};

class AtomCore : public std::enable_shared_from_this<AtomCore> {
 public:
  /// `watch_path` is the ZooKeeper node whose changes announce new values; `notify` says
  /// whether this core must touch it after each write (false when the value node is itself
  /// that node).
  AtomCore(std::string name, std::unique_ptr<AtomState> state, std::size_t max_value_size,
           ZooKeeperSession& session, std::string watch_path, bool notify,
           std::shared_ptr<CallbackExecutor> callbacks, std::size_t retry_limit,
           std::optional<std::chrono::milliseconds> operation_timeout = std::nullopt);
  ~AtomCore();

  const std::string& name() const { return name_; }
  std::size_t retry_limit() const { return retry_limit_; }
  /// The deadline of a call given none: the client's operation_timeout from now, or none.
  Deadline default_deadline() const;
  /// Before retry `attempt` (1-based) of `call`: a jittered, growing pause, bounded by
  /// `deadline`; Timeout naming the atom and `call` once it expired.
  void pause_before_retry(const char* call, std::size_t attempt, const Deadline& deadline);
  /// The stored value now.
  AtomSnapshot read();
  /// Stores `payload` if the cell still holds `expected`; false when another write came
  /// first. A lost reply is resolved by reading back (and, while the cell is unchanged,
  /// sending the same conditional write again), so the write lands at most once; when that
  /// cannot be found out, OutcomeUnknown. For a value held outside ZooKeeper the change
  /// notice is sent before returning; CommittedWithError when it could not be (stored).
  bool write(const AtomSnapshot& expected, Bytes payload);

  /// Adds or replaces the watch `key`.
  void add_watch(const std::string& key, BytesWatch watch);
  /// Removes the watch `key` (no error when absent).
  void remove_watch(const std::string& key);

 private:
  // `failure`: what the write threw (quoted if the outcome stays unknown).
  bool resolve_lost_reply(const AtomSnapshot& expected, const Bytes& sent, std::uint64_t writer,
                          std::string failure);
  AtomSnapshot read_after_sync();
  void announce();

  std::string name_;
  std::shared_ptr<AtomState> state_;  // shared with the watcher's reads
  std::size_t max_value_size_;
  ZooKeeperSession& session_;
  std::string watch_path_;
  bool notify_;
  std::size_t retry_limit_;
  std::optional<std::chrono::milliseconds> operation_timeout_;
  std::shared_ptr<ValueWatcher> watcher_;
};

/// Runs callbacks one at a time on a thread of its own (never on ZooKeeper's event thread),
/// so that a callback may call avout freely. A callback that throws is reported to `logger`.
class CallbackExecutor {
 public:
  /// Starts the thread; `logger` (empty: the default one) hears of callbacks that threw.
  explicit CallbackExecutor(Logger logger = {});
  ~CallbackExecutor();
  CallbackExecutor(const CallbackExecutor&) = delete;
  CallbackExecutor& operator=(const CallbackExecutor&) = delete;
  /// Queues `task`; dropped once stop() began.
  void post(std::function<void()> task);
  /// Refuses new tasks, lets the running one finish, then stops the thread (idempotent).
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A 64-bit id that no other write of any process is expected to share.
std::uint64_t unique_writer_id();

}  // namespace avout::detail
