#include "postgres_connection.hpp"
#include "postgres_stored_layout.hpp"

#include <avout/errors.hpp>
#include <avout/postgres.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>

namespace avout::postgres {

namespace {

pqxx::binarystring binary(const Bytes& value) {
  return pqxx::binarystring(value.data(), value.size());
}

// The parts of a value (<avout/stored_value.hpp>) as statement parameters.
struct Parts {
  std::string format;
  std::string meta;
  pqxx::binarystring payload;
};

Parts parts_of(avout::StoredKind kind, const Bytes& value) {
  auto split = avout::split_stored_value(kind, value);
  return Parts{std::move(split.format), std::move(split.bookkeeping), binary(split.payload)};
}

using avout::StoredKind;
using detail::payload_columns;
using detail::read_columns;
using detail::stored_bytes;

}  // namespace

struct detail::StoreState {
  StoreOptions options;
  std::string atoms;
  std::string ref_values;
  detail::Pool pool;
  std::string name;  // the store's name: the connection string's name=, else options.name

  explicit StoreState(StoreOptions given)
      : options(std::move(given)),
        atoms(options.table_prefix + "atoms"),
        ref_values(options.table_prefix + "ref_values"),
        pool(detail::parse_connection_string(options.url, options.connect_timeout),
             options.pool_size, [prefix = options.table_prefix](pqxx::connection& c) {
               detail::create_tables(c, prefix);
             }),
        name(pool.store_name().empty() ? options.name : pool.store_name()) {
    validate_store_name(options.name, "postgres store");
    if (name != options.name && options.name != StoreOptions{}.name) {
      throw InvalidName("postgres store: the connection string's name= and StoreOptions::name differ");
    }
    for (char c : options.table_prefix) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
        throw InvalidName("postgres table prefix may hold letters, digits and '_' only");
      }
    }
  }

  void check_size(const Bytes& value, const std::string& name) const {
    require_fits(value.size(), options.max_value_size, pool.description() + " " + name);
  }

  /// A statement deleting the ref values that match `rows` (a condition on name and point),
  /// committed without waiting for the log's flush: an erase lost to a server crash leaves
  /// only an unreferenced value, which gc removes, and waiting cost every erase a flush of
  /// the write-ahead log on the disk the commits' inserts wait on. The setting is the
  /// statement's own (local to its implicit transaction), so one round trip still does it.
  std::string erase_statement(const std::string& rows) const {
    return "WITH unflushed AS (SELECT set_config('synchronous_commit', 'off', true) AS setting), "
           "erased AS (DELETE FROM " +
           ref_values + " WHERE " + rows +
           " AND (SELECT setting FROM unflushed) IS NOT NULL RETURNING 1) "
           "SELECT count(*) FROM erased";
  }
};

namespace {

class PostgresAtomState final : public AtomState {
 public:
  PostgresAtomState(std::shared_ptr<detail::StoreState> impl, std::string name)
      : impl_(std::move(impl)), name_(std::move(name)) {}

  Versioned get() override {
    Versioned found;
    impl_->pool.run("read atom " + name_ + " from " + impl_->atoms, [&](pqxx::connection& c) {
      pqxx::nontransaction work(c);
      auto rows = work.exec_params("SELECT version, " + read_columns(StoredKind::atom) + " FROM " +
                                       impl_->atoms + " WHERE name = $1",
                                   name_);
      if (!rows.empty())
        found = Versioned{stored_bytes(StoredKind::atom, rows[0], 1), rows[0][0].c_str()};
    });
    return found;
  }

  bool compare_and_set(const Versioned& expected, Bytes next) override {
    impl_->check_size(next, name_);
    const Parts parts = parts_of(StoredKind::atom, next);
    bool written = false;
    const std::string what = "compare-and-set atom " + name_ + " in " + impl_->atoms;
    impl_->pool.run(what, [&](pqxx::connection& c) {
      pqxx::nontransaction work(c);
      pqxx::result result;
      if (!expected.exists()) {
        result = work.exec_params(
            "INSERT INTO " + impl_->atoms +
                " (name, version, format, meta, value_text, value_bytes) VALUES ($1, 1, $2, $3, " +
                payload_columns("$2::text", "$4::bytea") + ") ON CONFLICT (name) DO NOTHING",
            name_, parts.format, parts.meta, parts.payload);
      } else {
        long long version = 0;
        std::from_chars(expected.version.data(), expected.version.data() + expected.version.size(),
                        version);
        result = work.exec_params(
            "UPDATE " + impl_->atoms +
                " SET value = NULL, version = version + 1, format = $1, meta = $2, "
                "(value_text, value_bytes) = (SELECT " +
                payload_columns("$1::text", "$3::bytea") + ") WHERE name = $4 AND version = $5",
            parts.format, parts.meta, parts.payload, name_, version);
      }
      written = result.affected_rows() == 1;
    });
    return written;
  }

 private:
  std::shared_ptr<detail::StoreState> impl_;
  std::string name_;
};

class PostgresReferenceData final : public ReferenceData {
 public:
  PostgresReferenceData(std::shared_ptr<detail::StoreState> impl, std::string name)
      : impl_(std::move(impl)), name_(std::move(name)) {}

  std::string name() const override { return name_; }

  void set(Bytes value, const Point& point) override {
    impl_->check_size(value, name_);
    const Parts parts = parts_of(StoredKind::point, value);
    bool inserted = false;
    impl_->pool.run(
        "store ref " + name_ + " point " + point.id + " in " + impl_->ref_values,
        [&](pqxx::connection& c) {
          pqxx::nontransaction work(c);
          auto result = work.exec_params(
              "INSERT INTO " + impl_->ref_values +
                  " (name, point, format, value_text, value_bytes) VALUES ($1, $2, $3, " +
                  payload_columns("$3::text", "$4::bytea") + ") ON CONFLICT DO NOTHING",
              name_, point.id, parts.format, parts.payload);
          inserted = result.affected_rows() == 1;
        });
    if (!inserted) {
      throw BackendError(impl_->pool.description() + " ref " + name_ + ": point " + point.id +
                         " already stored");
    }
  }

  Bytes get(const Point& point) override {
    std::optional<Bytes> found;
    impl_->pool.run("read ref " + name_ + " point " + point.id + " from " + impl_->ref_values,
                    [&](pqxx::connection& c) {
                      pqxx::nontransaction work(c);
                      auto rows = work.exec_params("SELECT " + read_columns(StoredKind::point) +
                                                       " FROM " + impl_->ref_values +
                                                       " WHERE name = $1 AND point = $2",
                                                   name_, point.id);
                      if (!rows.empty()) found = stored_bytes(StoredKind::point, rows[0], 0);
                    });
    if (!found) {
      throw MissingPoint(impl_->pool.description() + " ref " + name_ + ": no value at point " +
                         point.id);
    }
    return std::move(*found);
  }

  void erase(const Point& point) override {
    impl_->pool.run("erase ref " + name_ + " point " + point.id, [&](pqxx::connection& c) {
      pqxx::nontransaction work(c);
      work.exec_params(impl_->erase_statement("name = $1 AND point = $2"), name_, point.id);
    });
  }

  void erase_values(std::span<const PointErasure> erasures) override;

  /// Whether this ref belongs to the store whose state is `impl`.
  bool made_by(const detail::StoreState* impl) const { return impl_.get() == impl; }

  std::vector<Point> points() override {
    std::vector<Point> found;
    impl_->pool.run("list ref " + name_, [&](pqxx::connection& c) {
      pqxx::nontransaction work(c);
      auto rows =
          work.exec_params("SELECT point FROM " + impl_->ref_values + " WHERE name = $1", name_);
      for (const auto& row : rows) found.push_back(Point{row[0].c_str()});
    });
    return found;
  }

 private:
  std::shared_ptr<detail::StoreState> impl_;
  std::string name_;
};

// The ref data of a batch element, which must have been made by the store with state `impl`.
PostgresReferenceData& own_data(ReferenceData* data, const detail::StoreState& impl) {
  auto* own = dynamic_cast<PostgresReferenceData*>(data);
  if (own == nullptr || !own->made_by(&impl)) {
    throw BackendError(impl.pool.description() + ": a batch holds ref " +
                       (data ? data->name() : std::string("(null)")) +
                       ", which this store did not make");
  }
  return *own;
}

// "($1, $n+1), ($2, $n+2), ...": rows of `columns` parameters where column c of row r is
// parameter c * rows + r + 1, so that each column's values are passed as one dynamic list;
// each parameter followed by its column's entry of `casts` (such as "::bytea") when given.
std::string parameter_rows(std::size_t rows, std::size_t columns,
                           const std::vector<std::string>& casts = {}) {
  std::string text;
  for (std::size_t r = 0; r < rows; ++r) {
    text += r == 0 ? "(" : ", (";
    for (std::size_t c = 0; c < columns; ++c) {
      if (c > 0) text += ", ";
      text += "$" + std::to_string(c * rows + r + 1) + (c < casts.size() ? casts[c] : "");
    }
    text += ")";
  }
  return text;
}

// PostgreSQL takes at most 65535 parameters per statement; larger batches take several.
constexpr std::size_t max_rows_per_statement = 20000;

// Store::erase_values, for the store with state `impl` (which the version sets keep alive).
void erase_batch(detail::StoreState& impl, std::span<const PointErasure> erasures) {
  for (std::size_t start = 0; start < erasures.size(); start += max_rows_per_statement) {
    const auto chunk =
        erasures.subspan(start, std::min(max_rows_per_statement, erasures.size() - start));
    std::vector<std::string> names, points;
    for (const auto& e : chunk) {
      names.push_back(own_data(e.data, impl).name());
      points.push_back(e.point.id);
    }
    impl.pool.run("erase " + std::to_string(chunk.size()) + " ref values",
                  [&](pqxx::connection& c) {
                    pqxx::nontransaction work(c);
                    work.exec_params(impl.erase_statement("(name, point) IN (VALUES " +
                                                          parameter_rows(chunk.size(), 2) + ")"),
                                     pqxx::prepare::make_dynamic_params(names),
                                     pqxx::prepare::make_dynamic_params(points));
                  });
  }
}

}  // namespace

void Store::set_values(std::span<const PointValue> values) {
  for (std::size_t start = 0; start < values.size(); start += max_rows_per_statement) {
    const auto chunk =
        values.subspan(start, std::min(max_rows_per_statement, values.size() - start));
    std::vector<std::string> names, points, formats;
    std::vector<pqxx::binarystring> payloads;
    for (const auto& v : chunk) {
      names.push_back(own_data(v.data, *impl_).name());
      impl_->check_size(v.value, names.back());
      points.push_back(v.point.id);
      Parts parts = parts_of(StoredKind::point, v.value);
      formats.push_back(std::move(parts.format));
      payloads.push_back(std::move(parts.payload));
    }
    std::vector<std::pair<std::string, std::string>> inserted;
    impl_->pool.run(
        "store " + std::to_string(chunk.size()) + " ref values", [&](pqxx::connection& c) {
          pqxx::nontransaction work(c);
          auto rows = work.exec_params(
              "INSERT INTO " + impl_->ref_values +
                  " (name, point, format, value_text, value_bytes) SELECT n, p, f, " +
                  payload_columns("f", "b") + " FROM (VALUES " +
                  parameter_rows(chunk.size(), 4, {"::text", "::text", "::text", "::bytea"}) +
                  ") AS v (n, p, f, b) ON CONFLICT DO NOTHING RETURNING name, point",
              pqxx::prepare::make_dynamic_params(names), pqxx::prepare::make_dynamic_params(points),
              pqxx::prepare::make_dynamic_params(formats),
              pqxx::prepare::make_dynamic_params(payloads));
          for (const auto& row : rows) inserted.emplace_back(row[0].c_str(), row[1].c_str());
        });
    if (inserted.size() == chunk.size()) continue;
    std::sort(inserted.begin(), inserted.end());
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      if (!std::binary_search(inserted.begin(), inserted.end(), std::pair(names[i], points[i]))) {
        throw BackendError(impl_->pool.description() + " ref " + names[i] + ": point " + points[i] +
                           " already stored");
      }
    }
    // Every pair came back, yet fewer rows than values: the batch named a point twice.
    throw BackendError(impl_->pool.description() + ": a batch of " + std::to_string(chunk.size()) +
                       " ref values names a point twice");
  }
}

void PostgresReferenceData::erase_values(std::span<const PointErasure> erasures) {
  erase_batch(*impl_, erasures);
}

void Store::erase_values(std::span<const PointErasure> erasures) { erase_batch(*impl_, erasures); }

std::vector<std::optional<Bytes>> Store::get_values(std::span<const PointRead> reads) {
  std::vector<std::optional<Bytes>> values(reads.size());
  for (std::size_t start = 0; start < reads.size(); start += max_rows_per_statement) {
    const auto chunk = reads.subspan(start, std::min(max_rows_per_statement, reads.size() - start));
    std::vector<std::string> names, points;
    for (const auto& r : chunk) {
      names.push_back(own_data(r.data, *impl_).name());
      points.push_back(r.point.id);
    }
    std::map<std::pair<std::string, std::string>, Bytes> found;
    impl_->pool.run(
        "read " + std::to_string(chunk.size()) + " ref values", [&](pqxx::connection& c) {
          pqxx::nontransaction work(c);
          auto rows =
              work.exec_params("SELECT name, point, " + read_columns(StoredKind::point) + " FROM " +
                                   impl_->ref_values + " WHERE (name, point) IN (VALUES " +
                                   parameter_rows(chunk.size(), 2) + ")",
                               pqxx::prepare::make_dynamic_params(names),
                               pqxx::prepare::make_dynamic_params(points));
          for (const auto& row : rows)
            found.emplace(std::pair(row[0].c_str(), row[1].c_str()),
                          stored_bytes(StoredKind::point, row, 2));
        });
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      if (auto row = found.find(std::pair(names[i], points[i])); row != found.end())
        values[start + i] = row->second;
    }
  }
  return values;
}

Store::Store(const std::string& url) : Store(StoreOptions{.url = url}) {}

Store::Store(StoreOptions options)
    : impl_(std::make_shared<detail::StoreState>(std::move(options))) {}

Store::~Store() = default;

std::string Store::description() const { return impl_->pool.description(); }

StoreIdentity Store::identity() const { return {"postgresql", impl_->name}; }

std::size_t Store::max_value_size() const { return impl_->options.max_value_size; }

std::unique_ptr<AtomState> Store::atom_state(const std::string& name) {
  return std::make_unique<PostgresAtomState>(impl_, name);
}

std::unique_ptr<ReferenceData> Store::reference_data(const std::string& name) {
  return std::make_unique<PostgresReferenceData>(impl_, name);
}

std::shared_ptr<detail::Pool> Store::shared_pool() const {
  return std::shared_ptr<detail::Pool>(impl_, &impl_->pool);  // keeps the whole store state alive
}

const StoreOptions& Store::options() const { return impl_->options; }

}  // namespace avout::postgres
