#pragma once
// PostgreSQL connection strings, read by libpq itself (PQconninfoParse): what to connect
// with, how to name it in messages, and which values are secrets to keep out of them.

#include <chrono>
#include <string>
#include <vector>

namespace avout::postgres::detail {

/// A connection string as libpq reads it.
struct ConnectionString {
  std::string conninfo;              // key='value' pairs for libpq, with a connect_timeout
  std::string description;           // "postgres user@host:port/dbname", no secret
  std::vector<std::string> secrets;  // values libpq marks secret (dispchar '*'): the password
  std::string name;                  // the store's name (name=...); empty when none is given
  /// Set on every connection (SET statement_timeout): a statement running longer is
  /// cancelled by the server and reported as Timeout. 0: no limit.
  std::chrono::milliseconds statement_timeout{default_statement_timeout};
  /// Used unless the string has statement_timeout=<milliseconds>.
  static constexpr std::chrono::milliseconds default_statement_timeout{30000};
};

/// Parses a postgresql:// or postgres:// URI or key=value pairs (passwords in any of the
/// forms: user:password@, ?password=, password=); adds connect_timeout unless given. Also
/// takes avout's own `statement_timeout=<milliseconds>` (a URI query parameter or a
/// key=value pair; 0: none) and `name=<store name>` (avout::validate_store_name), which libpq
/// does not know.
/// InvalidName, without the string itself, when libpq cannot read it.
ConnectionString parse_connection_string(const std::string& text,
                                         std::chrono::seconds connect_timeout);

/// `text` with every secret replaced by ***.
std::string redacted(std::string text, const std::vector<std::string>& secrets);

}  // namespace avout::postgres::detail
