#pragma once
// Redis store URLs: where to connect and as whom.

#include <chrono>
#include <string>

namespace avout::redis::detail {

/// Where and how to connect.
struct Endpoint {
  std::string host;  // empty for a unix socket
  int port = 6379;
  std::string socket_path;  // a unix socket; empty for TCP
  std::string user;         // AUTH user password (Redis 6+ ACLs); empty: AUTH password
  std::string password;     // empty: no AUTH
  int database = 0;         // SELECTed when not 0
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds command_timeout{5000};
  std::string description;  // "redis 127.0.0.1:6379/2", never the password
  std::string name;         // the store's name (?name=...); empty when the URL names none
};

/// Parses redis://[[user]:password@]host[:port][/db] (tcp:// alike; an IPv6 host in
/// brackets, [::1]), unix://[[user]:password@]/path[?db=N]; user and password may be
/// percent-encoded; a query parameter name=NAME names the store (avout::validate_store_name). rediss:// (TLS) is refused: hiredis 0.14 has no TLS. InvalidName, naming
/// what is wrong but never the password, on anything else.
Endpoint parse_url(const std::string& url);

}  // namespace avout::redis::detail
