#pragma once
// The tables of a PostgreSQL store and how a value sits in their rows (docs/stored-layout.md):
// the payload of a text or JSON value in the text column value_text, any other payload in
// the bytea column value_bytes, its format (and an atom's bookkeeping, meta) beside it. The
// old layout kept the core's bytes whole in `value`; writes now leave `value` NULL, so a row
// with a `value` was written in the old layout.

#include <avout/bytes.hpp>
#include <avout/stored_value.hpp>

#include <pqxx/pqxx>

#include <string>

namespace avout::postgres::detail {

/// Creates the atoms and ref_values tables of `prefix` when absent and adds the readable
/// layout's columns to tables the old layout made.
void create_tables(pqxx::connection& connection, const std::string& prefix);

/// The value_text and value_bytes expressions, comma-separated, for a row whose format is
/// the SQL expression `format` and whose payload (bytea) is `payload`.
std::string payload_columns(const std::string& format, const std::string& payload);

/// The columns a read selects, in the order stored_bytes takes them: value, format, meta
/// (an atom's; NULL for points) and the payload as bytea.
std::string read_columns(avout::StoredKind kind);

/// The core's bytes of a row read with read_columns(kind), from its column `first` on.
Bytes stored_bytes(avout::StoredKind kind, const pqxx::row& row, pqxx::row::size_type first);

}  // namespace avout::postgres::detail
