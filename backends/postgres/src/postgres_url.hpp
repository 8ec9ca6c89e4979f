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
};

/// Parses a postgresql:// or postgres:// URI or key=value pairs (passwords in any of the
/// forms: user:password@, ?password=, password=); adds connect_timeout unless given.
/// InvalidName, without the string itself, when libpq cannot read it.
ConnectionString parse_connection_string(const std::string& text, std::chrono::seconds connect_timeout);

/// `text` with every secret replaced by ***.
std::string redacted(std::string text, const std::vector<std::string>& secrets);

}  // namespace avout::postgres::detail
