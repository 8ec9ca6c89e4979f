#include "postgres_stored_layout.hpp"

namespace avout::postgres::detail {

namespace {

Bytes bytes_of(const pqxx::field& field) {
  const pqxx::binarystring data(field);
  return Bytes(data.begin(), data.end());
}

// True when `table` lacks the readable layout's columns (it was made by the old layout).
bool lacks_format(pqxx::work& work, const std::string& table) {
  return work.exec_params(
                 "SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass($1) "
                 "AND attname = 'format' AND NOT attisdropped",
                 table)[0][0]
             .as<long>() == 0;
}

// Adds the readable layout's columns to `table` (`atom`: also meta) and lets `value` be NULL.
void migrate(pqxx::work& work, const std::string& table, bool atom) {
  if (!lacks_format(work, table)) return;  // ALTER TABLE locks the table even when it adds nothing
  work.exec("ALTER TABLE " + table +
            " ADD COLUMN IF NOT EXISTS format text, ADD COLUMN IF NOT EXISTS value_text text, "
            "ADD COLUMN IF NOT EXISTS value_bytes bytea, ALTER COLUMN value DROP NOT NULL" +
            (atom ? ", ADD COLUMN IF NOT EXISTS meta text" : ""));
}

}  // namespace

// Concurrent CREATE TABLE IF NOT EXISTS (or ALTER TABLE) can still collide in the catalog:
// retry a few times.
void create_tables(pqxx::connection& connection, const std::string& prefix) {
  for (int attempt = 0;; ++attempt) {
    try {
      pqxx::work work(connection);
      work.exec("CREATE TABLE IF NOT EXISTS " + prefix +
                "atoms (name text PRIMARY KEY, value bytea, version bigint NOT NULL, "
                "format text, meta text, value_text text, value_bytes bytea)");
      work.exec("CREATE TABLE IF NOT EXISTS " + prefix +
                "ref_values (name text NOT NULL, point text NOT NULL, value bytea, "
                "format text, value_text text, value_bytes bytea, PRIMARY KEY (name, point))");
      migrate(work, prefix + "atoms", true);
      migrate(work, prefix + "ref_values", false);
      work.commit();
      return;
    } catch (const pqxx::sql_error&) {
      if (attempt >= 3) throw;
    }
  }
}

std::string payload_columns(const std::string& format, const std::string& payload) {
  const std::string readable = "CASE WHEN " + format + " IN ('text', 'json') ";
  return readable + "THEN convert_from(" + payload + ", 'UTF8') END, " + readable +
         "THEN NULL ELSE " + payload + " END";
}

std::string read_columns(avout::StoredKind kind) {
  return std::string("value, format, ") + (kind == avout::StoredKind::atom ? "meta" : "NULL") +
         ", coalesce(convert_to(value_text, 'UTF8'), value_bytes)";
}

Bytes stored_bytes(avout::StoredKind kind, const pqxx::row& row, pqxx::row::size_type first) {
  if (!row[first].is_null()) return bytes_of(row[first]);  // the old layout
  avout::StoredValue value{row[first + 1].c_str(), row[first + 2].c_str(), {}};
  if (!row[first + 3].is_null()) value.payload = bytes_of(row[first + 3]);
  return avout::join_stored_value(kind, value);
}

}  // namespace avout::postgres::detail
