#include "redis_url.hpp"

#include <avout/backend.hpp>
#include <avout/errors.hpp>

#include <charconv>
#include <string_view>

namespace avout::redis::detail {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX escapes, so that a password may hold '@', ':' or '/'. The text is a secret: the
// message does not quote it.
std::string percent_decoded(std::string_view text, const char* what) {
  std::string decoded;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      decoded += text[i];
      continue;
    }
    const int high = i + 2 < text.size() ? hex_digit(text[i + 1]) : -1;
    const int low = i + 2 < text.size() ? hex_digit(text[i + 2]) : -1;
    if (high < 0 || low < 0)
      throw InvalidName(std::string("redis url: bad %-escape in the ") + what);
    decoded += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return decoded;
}

int number(std::string_view text, const char* what, int low, int high) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < low ||
      value > high) {
    throw InvalidName("redis url has a bad " + std::string(what) + ": " + std::string(text));
  }
  return value;
}

// user:password or :password.
void take_credentials(std::string_view credentials, Endpoint& endpoint) {
  const auto colon = credentials.find(':');
  endpoint.user = percent_decoded(credentials.substr(0, colon), "user");
  if (colon != std::string_view::npos) {
    endpoint.password = percent_decoded(credentials.substr(colon + 1), "password");
  }
}

// host, host:port, [v6], [v6]:port
void take_host_port(std::string_view address, Endpoint& endpoint) {
  std::string_view port;
  if (address.starts_with('[')) {
    const auto close = address.find(']');
    if (close == std::string_view::npos) throw InvalidName("redis url: unclosed [ in the host");
    endpoint.host = std::string(address.substr(1, close - 1));
    const auto after = address.substr(close + 1);
    if (!after.empty() && !after.starts_with(':')) {
      throw InvalidName("redis url: unexpected text after the host: " + std::string(after));
    }
    if (!after.empty()) port = after.substr(1);
  } else {
    const auto colon = address.find(':');
    endpoint.host = std::string(address.substr(0, colon));
    if (colon != std::string_view::npos) port = address.substr(colon + 1);
  }
  if (endpoint.host.empty()) throw InvalidName("redis url has no host");
  if (!port.empty() || address.ends_with(':')) endpoint.port = number(port, "port", 1, 65535);
}

// ?db=N and ?name=NAME.
void take_query(std::string_view query, Endpoint& endpoint) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.starts_with("db=")) {
      endpoint.database = number(pair.substr(3), "database", 0, 1 << 20);
    } else if (pair.starts_with("name=")) {
      endpoint.name = std::string(pair.substr(5));
      validate_store_name(endpoint.name, "redis url");
    } else {
      const auto key = pair.substr(0, pair.find('='));
      throw InvalidName("redis url: unknown parameter " + std::string(key) + " (only db, name)");
    }
  }
}

std::string describe(const Endpoint& endpoint) {
  std::string text = "redis ";
  if (!endpoint.user.empty()) text += endpoint.user + "@";
  if (!endpoint.socket_path.empty()) {
    text += "unix:" + endpoint.socket_path;
  } else {
    const bool v6 = endpoint.host.find(':') != std::string::npos;
    text += (v6 ? "[" + endpoint.host + "]" : endpoint.host) + ":" + std::to_string(endpoint.port);
  }
  if (endpoint.database != 0) text += "/" + std::to_string(endpoint.database);
  return text;
}

}  // namespace

Endpoint parse_url(const std::string& url) {
  const auto separator = url.find("://");
  const std::string scheme = separator == std::string::npos ? "" : url.substr(0, separator);
  if (scheme == "rediss") {
    throw InvalidName("rediss:// (Redis over TLS) is not supported: hiredis 0.14 has no TLS");
  }
  if (scheme != "redis" && scheme != "tcp" && scheme != "unix") {
    throw InvalidName("a redis url starts with redis://, tcp:// or unix://");
  }
  Endpoint endpoint;
  std::string_view rest = std::string_view(url).substr(separator + 3);
  std::string_view query;
  if (const auto mark = rest.find('?'); mark != std::string_view::npos) {
    query = rest.substr(mark + 1);
    rest = rest.substr(0, mark);
  }
  // The last '@' ends the credentials; a path after it has none.
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    take_credentials(rest.substr(0, at), endpoint);
    rest = rest.substr(at + 1);
  }
  if (scheme == "unix") {
    if (!rest.starts_with('/'))
      throw InvalidName("redis url: unix:// needs an absolute socket path");
    endpoint.socket_path = std::string(rest);
  } else {
    const auto slash = rest.find('/');
    take_host_port(rest.substr(0, slash), endpoint);
    if (slash != std::string_view::npos && slash + 1 < rest.size()) {
      endpoint.database = number(rest.substr(slash + 1), "database", 0, 1 << 20);
    }
  }
  take_query(query, endpoint);
  if (!endpoint.user.empty() && endpoint.password.empty()) {
    throw InvalidName("redis url names the user " + endpoint.user + " but no password");
  }
  endpoint.description = describe(endpoint);
  return endpoint;
}

}  // namespace avout::redis::detail
