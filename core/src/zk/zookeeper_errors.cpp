#include "zk/zookeeper_errors.hpp"

#include "zk/zookeeper_c.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

namespace {

std::string describe(int code, std::string_view operation, const std::string& path) {
  std::string message = "zookeeper ";
  message += operation;
  if (!path.empty()) message += " " + path;
  message += ": ";
  message += zerror(code);
  return message;
}

}  // namespace

bool is_connection_level(int code) {
  return code == ZCONNECTIONLOSS || code == ZOPERATIONTIMEOUT || code == ZSESSIONEXPIRED ||
         code == ZINVALIDSTATE || code == ZCLOSING || code == ZSESSIONMOVED;
}

std::exception_ptr zookeeper_error(int code, std::string_view operation, const std::string& path) {
  const std::string message = describe(code, operation, path);
  switch (code) {
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    case ZCLOSING:
    case ZSESSIONMOVED: return std::make_exception_ptr(ConnectionLoss(message));
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE: return std::make_exception_ptr(SessionExpired(message));
    case ZNONODE: return std::make_exception_ptr(NoNode(message, code, path));
    case ZNODEEXISTS: return std::make_exception_ptr(NodeExists(message, code, path));
    case ZBADVERSION: return std::make_exception_ptr(BadVersion(message, code, path));
    case ZNOTEMPTY: return std::make_exception_ptr(NotEmpty(message, code, path));
    case ZNOAUTH:
    case ZAUTHFAILED: return std::make_exception_ptr(NoAuth(message, code, path));
    case ZBADARGUMENTS: return std::make_exception_ptr(InvalidName(message));
    default: return std::make_exception_ptr(ZooKeeperError(message, code, path));
  }
}

void throw_zookeeper_error(int code, std::string_view operation, const std::string& path) {
  std::rethrow_exception(zookeeper_error(code, operation, path));
}

}  // namespace avout::detail
