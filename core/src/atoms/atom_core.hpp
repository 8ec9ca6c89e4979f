#pragma once
// The type-independent half of an atom: reads and compare-and-sets of its envelope, the
// resolution of a compare-and-set whose reply was lost, and cross-process watches.

#include "records/atom_envelope.hpp"
#include "runtime/value_watcher.hpp"

#include <avout/backend.hpp>
#include <avout/deadline.hpp>
#include <avout/detail/atom_handle.hpp>
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

class CallbackExecutor;

/// The library side of an atom (AtomHandle).
class AtomCore : public AtomHandle, public std::enable_shared_from_this<AtomCore> {
 public:
  /// `watch_path` is the ZooKeeper node whose changes announce new values; `notify` says
  /// whether this core must touch it after each write (false when the value node is itself
  /// that node). With `notify`, `deaths` makes watches read again when a writer died before
  /// its touch, and `announce_writer` (called before each write) makes sure this client's
  /// session is one whose end they see.
  AtomCore(std::string name, std::unique_ptr<AtomState> state, std::size_t max_value_size,
           ZooKeeperSession& session, std::string watch_path, bool notify,
           std::shared_ptr<CallbackExecutor> callbacks, std::size_t retry_limit,
           std::optional<std::chrono::milliseconds> operation_timeout = std::nullopt,
           std::shared_ptr<SessionDeaths> deaths = nullptr,
           std::function<void()> announce_writer = {});
  ~AtomCore() override;

  const std::string& name() const override { return name_; }
  std::size_t retry_limit() const override { return retry_limit_; }
  Deadline default_deadline() const override;
  void pause_before_retry(const char* call, std::size_t attempt, const Deadline& deadline) override;
  /// The stored value now; Timeout when `deadline` expires first.
  AtomSnapshot read(const Deadline& deadline) override;
  /// Stores `payload` if the cell still holds `expected`; false when another write came
  /// first. A lost reply is resolved by reading back (and, while the cell is unchanged,
  /// sending the same conditional write again), so the write lands at most once; when that
  /// cannot be found out, OutcomeUnknown. For a value held outside ZooKeeper the change
  /// notice is sent before returning; CommittedWithError when it could not be (stored).
  /// `deadline` bounds every wait; a write in flight when it expires is OutcomeUnknown.
  bool write(const AtomSnapshot& expected, Bytes payload, const Deadline& deadline) override;

  /// Adds or replaces the watch `key`.
  void add_watch(const std::string& key, BytesWatch watch) override;
  /// Removes the watch `key` (no error when absent).
  void remove_watch(const std::string& key) override;

 private:
  // `failure`: what the write threw (quoted if the outcome stays unknown).
  bool resolve_lost_reply(const AtomSnapshot& expected, const Bytes& sent, std::uint64_t writer,
                          std::string failure);
  AtomSnapshot read();
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
  std::function<void()> announce_writer_;
  std::shared_ptr<ValueWatcher> watcher_;
};

}  // namespace avout::detail
