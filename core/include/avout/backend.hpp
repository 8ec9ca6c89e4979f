#pragma once
// The interfaces a value store implements (docs/writing-a-store.md): AtomState, ReferenceData
// and the Store that makes them. ZooKeeper coordinates; a store only keeps bytes.
// Implementations must be thread safe: one object may be used by several threads at once.
//
// Errors: every call may throw BackendError when the store fails. The built-in stores throw
// one of its two kinds: StoreUnavailable (no answer: a write may or may not have been applied;
// the writes are AtomState::compare_and_set, ReferenceData::set and erase, Store::set_values
// and erase_values) and StoreRefused (the store answered with an error: nothing applied).
// ValueTooLarge comes before anything is written; MissingPoint from ReferenceData::get
// (Store::get_values answers an empty optional there instead).

#include <avout/bytes.hpp>
#include <avout/errors.hpp>
#include <avout/export.hpp>

#include <compare>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace avout {

/// A value with the store's opaque version of it; an empty version means "no value yet".
struct Versioned {
  Bytes value;          ///< the stored bytes (empty when absent)
  std::string version;  ///< opaque to the core; compared only by the store that made it

  /// True when the cell holds a value.
  bool exists() const noexcept { return !version.empty(); }
};

/// Throws ValueTooLarge, naming `what`, when `size` bytes exceed `limit`. Stores and the
/// core call it before writing anything.
inline void require_fits(std::size_t size, std::size_t limit, const std::string& what) {
  if (size > limit) {
    throw ValueTooLarge(what + ": value of " + std::to_string(size) +
                        " bytes exceeds the limit of " + std::to_string(limit));
  }
}

/// One compare-and-set cell: the storage of an atom.
class AVOUT_API AtomState {
 public:
  virtual ~AtomState() = default;
  /// The current bytes and version; an absent cell gives a Versioned with an empty version.
  virtual Versioned get() = 0;
  /// Stores `next` only if the cell still has `expected.version` (empty: only if absent).
  /// Returns false when the version moved on. Throws ValueTooLarge before writing anything
  /// when `next` exceeds the store's limit, BackendError when the store fails.
  virtual bool compare_and_set(const Versioned& expected, Bytes next) = 0;
};

/// A unique commit point: where one committed (or pending) version of a ref is stored.
struct Point {
  std::string id;  ///< unique across all processes and time; [A-Za-z0-9-] only
  /// Points order by id (only for stable listings; ids carry no time order).
  auto operator<=>(const Point&) const = default;
};

class ReferenceData;

/// One stored value to remove: an element of Store::erase_values and ReferenceData::erase_values.
struct PointErasure {
  ReferenceData* data;  ///< the ref's version set, made by the store it is handed to
  Point point;          ///< the point to remove
};

/// A ref's stored versions, one per point.
class AVOUT_API ReferenceData {
 public:
  virtual ~ReferenceData() = default;
  /// The ref's name, as given to Store::reference_data.
  virtual std::string name() const = 0;
  /// Creates the value at `point`; durable and acknowledged on return. Never overwrites:
  /// a point that already exists throws BackendError. ValueTooLarge before writing anything.
  virtual void set(Bytes value, const Point& point) = 0;
  /// The value at `point`; throws MissingPoint when the store has no value there.
  virtual Bytes get(const Point& point) = 0;
  /// Removes the value at `point` (no error when it is already gone).
  virtual void erase(const Point& point) = 0;
  /// Every point stored for this ref (for garbage collection).
  virtual std::vector<Point> points() = 0;
  /// Removes every value of `erasures`, whose version sets were all made by the store that
  /// made this one, as Store::erase_values would; unlike it, called when that Store object
  /// may already be gone (the core erases trimmed values in the background). The default
  /// erases them one after another; a store whose version sets share its connections
  /// overrides it to erase them in one round trip.
  virtual void erase_values(std::span<const PointErasure> erasures) {
    for (const auto& e : erasures) e.data->erase(e.point);
  }
};

/// One value to store at a fresh point of a ref: an element of Store::set_values.
struct PointValue {
  ReferenceData* data;  ///< the ref's version set, made by the store it is handed to
  Point point;          ///< the fresh point to create
  Bytes value;          ///< the bytes to store there
};

/// One stored value to read: an element of Store::get_values.
struct PointRead {
  ReferenceData* data;  ///< the ref's version set, made by the store it is handed to
  Point point;          ///< the point to read
};

/// Which store a deployment keeps a value in, as ZooKeeper records it for each atom, ref and
/// agent (docs/architecture.md): the kind of store and a name the deployment gives it. Never
/// an address or credentials: every process resolves it to a store of its own configuration.
struct StoreIdentity {
  std::string scheme;  ///< the kind of store ("zookeeper", "redis", "postgresql", "custom")
  std::string name;    ///< the store's name in its deployment ("default" unless named)
  /// Identities compare by scheme and name.
  bool operator==(const StoreIdentity&) const = default;
  /// "scheme:name", as messages and the CLI show it.
  std::string text() const { return scheme + ":" + name; }
};

/// InvalidName, naming `what`, unless `name` is a store name: 1 to 64 letters, digits, '-',
/// '_' or '.'.
AVOUT_API void validate_store_name(const std::string& name, const std::string& what);

/// A place values live: makes the cells and version sets for names.
class AVOUT_API Store {
 public:
  virtual ~Store() = default;
  /// A short name of the store kind and address for messages ("redis tcp://127.0.0.1:6379").
  virtual std::string description() const = 0;
  /// Which store this is, recorded in ZooKeeper by the first attach of each atom, ref and
  /// agent; a later attach through a store of another identity throws Mismatch. The default,
  /// {"custom", "default"}, suits a deployment with one store of its own kind; override it
  /// when a deployment uses more than one (the scheme names the kind, the name which one).
  virtual StoreIdentity identity() const { return {"custom", "default"}; }
  /// The largest value, in bytes, the store accepts.
  virtual std::size_t max_value_size() const = 0;
  /// The CAS cell for the atom called `name` (a ZooKeeper-style path such as "/counter").
  virtual std::unique_ptr<AtomState> atom_state(const std::string& name) = 0;
  /// The version set of the ref called `name`.
  virtual std::unique_ptr<ReferenceData> reference_data(const std::string& name) = 0;
  /// Creates every value of `values` (each as its `data->set` would), all durable and
  /// acknowledged on return; every `data` was made by this store. When it throws, any of them
  /// may have been written. The default sets them one after another; a store overrides it to
  /// write them in one round trip.
  virtual void set_values(std::span<const PointValue> values) {
    for (const auto& v : values) v.data->set(v.value, v.point);
  }
  /// Removes every value of `erasures` (each as its `data->erase` would; no error when one is
  /// already gone). The default erases them one after another; a store overrides it to erase
  /// them in one round trip.
  virtual void erase_values(std::span<const PointErasure> erasures) {
    for (const auto& e : erasures) e.data->erase(e.point);
  }
  /// The value at every point of `reads`, in their order (each as its `data->get` would),
  /// empty where the store has no value at that point; every `data` was made by this store.
  /// The default reads them one after another; a store overrides it to read them in one
  /// round trip.
  virtual std::vector<std::optional<Bytes>> get_values(std::span<const PointRead> reads) {
    std::vector<std::optional<Bytes>> values;
    values.reserve(reads.size());
    for (const auto& r : reads) {
      try {
        values.emplace_back(r.data->get(r.point));
      } catch (const MissingPoint&) {
        values.emplace_back();
      }
    }
    return values;
  }
};

}  // namespace avout
