#pragma once
// What Atom<T> needs of an atom: reads and compare-and-sets of its bytes on an opaque core
// (its stored format, lost-reply resolution and watches live in the library's sources).

#include <avout/backend.hpp>
#include <avout/deadline.hpp>
#include <avout/detail/typed_watch.hpp>
#include <avout/export.hpp>

#include <cstdint>
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

/// A stored value as read: the store's version and the decoded envelope.
struct AtomSnapshot {
  Versioned stored;       ///< bytes and store version
  AtomEnvelope envelope;  ///< decoded from stored.value (empty when absent)
};

/// One atom of one client, as its typed handles see it. Implemented by the library.
class AVOUT_API AtomHandle {
 public:
  virtual ~AtomHandle() = default;
  /// The atom's name.
  virtual const std::string& name() const = 0;
  /// Compare-and-set attempts before RetryLimitExceeded.
  virtual std::size_t retry_limit() const = 0;
  /// The deadline of a call given none: the client's operation_timeout from now, or none.
  virtual Deadline default_deadline() const = 0;
  /// Before retry `attempt` (1-based) of `call`: a jittered, growing pause, bounded by
  /// `deadline`; Timeout naming the atom and `call` once it expired.
  virtual void pause_before_retry(const char* call, std::size_t attempt,
                                  const Deadline& deadline) = 0;
  /// The stored value now; Timeout (nothing written) when `deadline` expires while ZooKeeper
  /// has not answered.
  virtual AtomSnapshot read(const Deadline& deadline) = 0;
  /// Stores `payload` if the cell still holds `expected`; false when another write came
  /// first. The write lands at most once, even when its reply was lost; OutcomeUnknown when
  /// that cannot be found out (also when `deadline` expires with the write in flight),
  /// CommittedWithError when stored but its change notice not sent (by `deadline`).
  virtual bool write(const AtomSnapshot& expected, Bytes payload, const Deadline& deadline) = 0;
  /// Adds or replaces the watch `key`.
  virtual void add_watch(const std::string& key, BytesWatch watch) = 0;
  /// Removes the watch `key` (no error when absent).
  virtual void remove_watch(const std::string& key) = 0;
};

}  // namespace avout::detail
