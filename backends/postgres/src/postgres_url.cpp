#include "postgres_url.hpp"

#include <avout/errors.hpp>

#include <libpq-fe.h>

#include <map>
#include <memory>

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

}  // namespace

ConnectionString parse_connection_string(const std::string& text, std::chrono::seconds connect_timeout) {
  char* error = nullptr;
  std::unique_ptr<PQconninfoOption, OptionsDeleter> options(PQconninfoParse(text.c_str(), &error));
  if (!options) {
    const std::string reason = error ? without_quoted_parts(error) : "out of memory";
    PQfreemem(error);
    throw InvalidName("postgres connection string not understood: " + reason);
  }
  ConnectionString result;
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
