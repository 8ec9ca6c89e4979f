#pragma once
// avout::postgres::Store: atom values and ref versions kept in PostgreSQL tables (libpqxx).

#include <avout/backend.hpp>
#include <avout/export.hpp>
#include <avout/lease_lock.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace avout::postgres {

namespace detail {
class Pool;
struct StoreState;
}  // namespace detail

/// Settings of a PostgreSQL store.
struct StoreOptions {
  /// A libpq connection string: postgresql:// or postgres:// URI, or key=value pairs. Its
  /// password (in the URI, ?password= or password=) never appears in messages.
  /// avout's own parameter name=NAME (?name= or a name= pair) names the store, as `name` does.
  std::string url = "postgresql://127.0.0.1/avout";
  /// The store's name in its deployment (identity() {"postgresql", name}): letters, digits,
  /// '-', '_', '.'. A connection string's name= replaces "default"; one differing from
  /// another name set here is InvalidName.
  std::string name = "default";
  std::string table_prefix = "avout_";      ///< tables <prefix>atoms, <prefix>ref_values
  std::chrono::seconds connect_timeout{5};  ///< per connection attempt
  std::size_t max_value_size = 64u << 20;   ///< larger values are ValueTooLarge
  std::size_t pool_size = 8;                ///< idle connections kept
};

/// Values in PostgreSQL; creates its tables on first use. Compare-and-set is one conditional
/// UPDATE; a ref version is durable when the INSERT returns. Thread safe. A string or JSON
/// value is kept in a text column, its format and bookkeeping in columns beside it; tables
/// made by older versions get those columns added (docs/stored-layout.md).
///
/// Errors: every call throws StoreUnavailable when PostgreSQL cannot be reached or its
/// answer does not come (connection refused or lost, libpqxx's in_doubt_error): a write then
/// may or may not have been applied (compare_and_set, set, erase, set_values, erase_values;
/// reads are only unanswered). It throws StoreRefused when the server answered with an error
/// (authentication, permission, a cancelled statement): the statement was not applied.
/// ValueTooLarge and MissingPoint as in <avout/backend.hpp>.
class AVOUT_API Store final : public avout::Store {
 public:
  /// Connects lazily to `url` with default options; InvalidName at once when libpq cannot
  /// read the connection string.
  explicit Store(const std::string& url);
  /// Connects lazily with the given options (InvalidName as above).
  explicit Store(StoreOptions options);
  ~Store() override;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  std::string description() const override;
  /// {"postgresql", the store's name} (StoreOptions::name, or the connection string's name=).
  StoreIdentity identity() const override;
  std::size_t max_value_size() const override;
  std::unique_ptr<AtomState> atom_state(const std::string& name) override;
  std::unique_ptr<ReferenceData> reference_data(const std::string& name) override;
  /// Stores every value with one multi-row INSERT, a single statement that commits by itself:
  /// one round trip. An existing point throws BackendError (the others are written).
  void set_values(std::span<const PointValue> values) override;
  /// Erases every value with one DELETE ... WHERE (name, point) IN (...): one round trip.
  void erase_values(std::span<const PointErasure> erasures) override;
  /// Reads every value with one SELECT ... WHERE (name, point) IN (...): one round trip.
  std::vector<std::optional<Bytes>> get_values(std::span<const PointRead> reads) override;

 private:
  // Lease locks share this store's connections and table prefix (postgres_lease.cpp).
  friend LeaseLock lease_lock(Store& store, const std::string& name);
  std::shared_ptr<detail::Pool> shared_pool() const;
  const StoreOptions& options() const;

  std::shared_ptr<detail::StoreState> impl_;
};

/// The lease lock `name` (1 to 1024 characters, no control characters; else InvalidName)
/// kept in `store`'s table <prefix>leases (name, key, token, holder, expires_at), created on
/// first use: PostgreSQL's clock_timestamp() judges expiry, and a key's row is kept after
/// release so its token keeps increasing. May outlive the store (it shares its connections).
AVOUT_API LeaseLock lease_lock(Store& store, const std::string& name);

/// Registers the URL schemes postgresql and postgres (a Store with default options) with
/// avout::make_store.
AVOUT_API void register_store_schemes();

}  // namespace avout::postgres
