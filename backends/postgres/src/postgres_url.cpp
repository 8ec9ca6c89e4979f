#include "postgres_url.hpp"

#include <avout/backend.hpp>
#include <avout/errors.hpp>

#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <sstream>

namespace avout::postgres::detail {

namespace {

struct OptionsDeleter {
  void operator()(PQconninfoOption* options) const { PQconninfoFree(options); }
};

// libpq's key='value' quoting: backslash and single quote escaped.
std::string quoted(const std::string& value) {
  std::string text = "'";
  for (char c : value) {
    if (c == '\\' || c == '\'') text += '\\';
    text += c;
  }
  return text + "'";
}

// libpq's parse errors quote pieces of the string, which may be a password: drop them.
std::string without_quoted_parts(const std::string& message) {
  std::string text;
  bool inside = false;
  for (char c : message) {
    if (c == '"') {
      if (!inside) text += "\"...\"";
      inside = !inside;
    } else if (!inside && c != '\n') {
      text += c;
    }
  }
  return text;
}

// Removes `key`=<value> from a URI's query or from key=value pairs and returns the value
// (unquoted values only), or "" when absent.
std::string take_parameter(std::string& text, const std::string& key) {
  const std::string prefix = key + "=";
  std::string value;
  const bool uri = text.find("://") != std::string::npos;
  const auto query_at = text.find('?');
  if (uri && query_at == std::string::npos) return value;
  std::vector<std::string> kept;
  std::string rest = uri ? text.substr(query_at + 1) : text;
  std::string piece;
  const char separator = uri ? '&' : ' ';
  std::istringstream pieces(rest);
  while (std::getline(pieces, piece, separator)) {
    if (piece.rfind(prefix, 0) == 0) {
      value = piece.substr(prefix.size());
    } else if (!piece.empty()) {
      kept.push_back(piece);
    }
  }
  std::string joined;
  for (const auto& part : kept) joined += (joined.empty() ? "" : std::string(1, separator)) + part;
  text = uri ? text.substr(0, query_at) + (joined.empty() ? "" : "?" + joined) : joined;
  return value;
}

std::chrono::milliseconds statement_timeout_of(const std::string& value) {
  if (value.empty()) return ConnectionString::default_statement_timeout;
  if (value.size() > 9 || !std::all_of(value.begin(), value.end(),
                                       [](unsigned char c) { return std::isdigit(c) != 0; })) {
    throw InvalidName(
        "postgres connection string: statement_timeout must be a number of "
        "milliseconds (0: none), got \"" +
        value + "\"");
  }
  return std::chrono::milliseconds(std::stol(value));
}

}  // namespace

ConnectionString parse_connection_string(const std::string& given_text,
                                         std::chrono::seconds connect_timeout) {
  std::string text = given_text;
  const auto statement_timeout = statement_timeout_of(take_parameter(text, "statement_timeout"));
  const std::string name = take_parameter(text, "name");
  if (!name.empty()) validate_store_name(name, "postgres connection string");
  char* error = nullptr;
  std::unique_ptr<PQconninfoOption, OptionsDeleter> options(PQconninfoParse(text.c_str(), &error));
  if (!options) {
    const std::string reason = error ? without_quoted_parts(error) : "out of memory";
    PQfreemem(error);
    throw InvalidName("postgres connection string not understood: " + reason);
  }
  ConnectionString result;
  result.statement_timeout = statement_timeout;
  result.name = name;
  std::map<std::string, std::string> given;
  for (const PQconninfoOption* option = options.get(); option->keyword; ++option) {
    if (!option->val || !*option->val) continue;
    given[option->keyword] = option->val;
    result.conninfo += std::string(result.conninfo.empty() ? "" : " ") + option->keyword + "=" +
                       quoted(option->val);
    if (option->dispchar && option->dispchar[0] == '*') result.secrets.push_back(option->val);
  }
  if (!given.contains("connect_timeout")) {
    result.conninfo += " connect_timeout=" + std::to_string(connect_timeout.count());
  }
  auto field = [&](const char* key) { return given.contains(key) ? given[key] : std::string(); };
  std::string where = field("host").empty() ? field("hostaddr") : field("host");
  if (where.empty()) where = "localhost";
  result.description = "postgres " + (field("user").empty() ? "" : field("user") + "@") + where +
                       (field("port").empty() ? "" : ":" + field("port")) +
                       (field("dbname").empty() ? "" : "/" + field("dbname"));
  return result;
}

std::string redacted(std::string text, const std::vector<std::string>& secrets) {
  for (const auto& secret : secrets) {
    for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 3)) {
      text.replace(at, secret.size(), "***");
    }
  }
  return text;
}

}  // namespace avout::postgres::detail
