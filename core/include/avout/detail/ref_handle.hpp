#pragma once
// What Ref<T> and Client::dosync need of the transaction engine: byte-level calls on an
// opaque ref (the engine, its records and ZooKeeper layout live in the library's sources).

#include <avout/bytes.hpp>
#include <avout/deadline.hpp>
#include <avout/detail/typed_watch.hpp>
#include <avout/export.hpp>
#include <avout/isolation.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace avout::detail {

class StmContext;

/// One ref of one client, as its typed handles see it. Implemented by the engine.
class AVOUT_API RefHandle {
 public:
  virtual ~RefHandle() = default;
  /// The ref's name.
  virtual const std::string& name() const = 0;
  /// Inside a dosync: the value as of its snapshot (or its own write); else the newest value.
  virtual Bytes deref() = 0;
  /// The value in the running dosync; NoTransaction outside one.
  virtual Bytes read_in_transaction() = 0;
  /// The values of `refs` (this client's), their heads read together: inside a dosync as of
  /// its snapshot, else from one read-only transaction of their own.
  virtual std::vector<Bytes> deref_together(const std::vector<RefHandle*>& refs) = 0;
  /// Sets the value in the running dosync; NoTransaction outside one.
  virtual void write(Bytes value) = 0;
  /// Protects the ref until the running dosync commits; returns its value.
  virtual Bytes ensure() = 0;
  /// Applies `function` now and again at commit to the newest value; returns its result now.
  virtual Bytes commute(std::function<Bytes(const Bytes&)> function) = 0;
  /// CodecError naming both kinds when the stored value is another kind than `sample`.
  virtual void require_kind(const Bytes& sample) = 0;
  /// Installs a validator for this ref in this client (empty: none).
  virtual void set_validator(std::function<bool(const Bytes&)> validator) = 0;
  /// Adds or replaces the watch `key`.
  virtual void add_watch(const std::string& key, BytesWatch watch) = 0;
  /// Removes the watch `key` (no error when absent).
  virtual void remove_watch(const std::string& key) = 0;
};

/// Runs `body` as a transaction with retries (Client::dosync without the result type).
AVOUT_API void run_transaction(StmContext& stm, const std::function<void()>& body);
/// Like run_transaction, giving up with Timeout once `deadline` expires (checked between
/// attempts and bounding back-off pauses; a commit in flight is awaited).
AVOUT_API void run_transaction(StmContext& stm, const Deadline& deadline, const std::function<void()>& body);

/// What one dosync asks beyond its body; an empty field takes the client's option.
struct TransactionSettings {
  std::optional<Deadline> deadline{};    ///< none: options().operation_timeout
  std::optional<Isolation> isolation{};  ///< none: options().isolation
};
/// Like run_transaction, with the deadline and isolation of `settings`.
AVOUT_API void run_transaction(StmContext& stm, const TransactionSettings& settings,
                               const std::function<void()>& body);

}  // namespace avout::detail
