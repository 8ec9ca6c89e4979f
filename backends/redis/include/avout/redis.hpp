#pragma once
// avout::redis::Store: atom values and ref versions kept in Redis (hiredis underneath).

#include <avout/backend.hpp>
#include <avout/export.hpp>
#include <avout/lease_lock.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace avout::redis {

namespace detail {
class Pool;
struct StoreState;
}  // namespace detail

/// Settings of a Redis store.
struct StoreOptions {
  /// redis://[[user]:password@]host[:port][/db] (tcp:// alike; IPv6 as [::1]) or
  /// unix://[[user]:password@]/path[?db=N]; a user means AUTH user password (Redis 6 ACLs).
  /// A query parameter name=NAME names the store, as `name` does.
  std::string url = "redis://127.0.0.1:6379";
  /// The store's name in its deployment (identity() {"redis", name}): letters, digits, '-',
  /// '_', '.'. A URL's name= replaces "default"; one differing from another name set here
  /// is InvalidName.
  std::string name = "default";
  std::chrono::milliseconds connect_timeout{2000};  ///< per connection attempt
  std::chrono::milliseconds command_timeout{5000};  ///< per command; then StoreUnavailable
  std::string key_prefix = "avout:";                ///< every key starts with this
  std::size_t max_value_size = 64u << 20;           ///< larger values are ValueTooLarge
  std::size_t pool_size = 8;                        ///< idle connections kept
};

/// Values in Redis. Compare-and-set runs as one server-side script, so it is atomic. A ref
/// version is acknowledged when Redis replied; it survives a Redis restart only with
/// appendonly and appendfsync always. Thread safe. A string or JSON value is kept as its
/// text, its format and bookkeeping in fields beside it (docs/stored-layout.md).
///
/// Errors: every call throws StoreUnavailable when Redis cannot be reached or a reply does
/// not come (connect refused, connection lost, command_timeout passed): a write then may or
/// may not have been applied (compare_and_set, set, erase, set_values, erase_values; reads
/// are only unanswered). It throws StoreRefused when Redis answered with an error (a wrong
/// password, a read-only replica, out of memory): nothing of that command was applied.
/// ValueTooLarge and MissingPoint as in <avout/backend.hpp>.
class AVOUT_API Store final : public avout::Store {
 public:
  /// Connects lazily to `url` (see StoreOptions::url) with default options; InvalidName when
  /// the URL is malformed or rediss:// (hiredis 0.14 has no TLS).
  explicit Store(const std::string& url);
  /// Connects lazily with the given options.
  explicit Store(StoreOptions options);
  ~Store() override;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  std::string description() const override;
  /// {"redis", the store's name} (StoreOptions::name, or the URL's name=).
  StoreIdentity identity() const override;
  std::size_t max_value_size() const override;
  std::unique_ptr<AtomState> atom_state(const std::string& name) override;
  std::unique_ptr<ReferenceData> reference_data(const std::string& name) override;
  /// Stores every value with its own create-if-absent script, all pipelined on one connection: one
  /// round trip. Every reply is checked: an existing point throws BackendError (the other
  /// values are written), an error reply StoreRefused.
  void set_values(std::span<const PointValue> values) override;
  /// Erases every value (its key and its entry in the ref's point set), pipelined: one round
  /// trip.
  void erase_values(std::span<const PointErasure> erasures) override;
  /// Reads every value with one script: one round trip.
  std::vector<std::optional<Bytes>> get_values(std::span<const PointRead> reads) override;

 private:
  // Lease locks share this store's connections and key prefix (redis_lease.cpp).
  friend LeaseLock lease_lock(Store& store, const std::string& name);
  std::shared_ptr<detail::Pool> shared_pool() const;
  const StoreOptions& options() const;

  std::shared_ptr<detail::StoreState> impl_;
};

/// The lease lock `name` (1 to 1024 characters, no control characters; else InvalidName)
/// kept in `store`: per key a Redis string set with PX, so Redis's clock judges expiry, and
/// a never-expiring counter that makes the fencing tokens. Keys "<prefix>lease:<name>/<key>"
/// and "<prefix>lease-token:<name>/<key>". May outlive the store (it shares its connections).
AVOUT_API LeaseLock lease_lock(Store& store, const std::string& name);

/// Registers the URL schemes redis, tcp and unix (a Store with default options) and rediss
/// (refused with InvalidName: no TLS in hiredis 0.14) with avout::make_store.
AVOUT_API void register_store_schemes();

}  // namespace avout::redis
