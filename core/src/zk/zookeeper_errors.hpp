#pragma once
// The border where ZooKeeper result codes become avout's typed errors.

#include <exception>
#include <string>
#include <string_view>

namespace avout::detail {

/// The typed error for a ZooKeeper result code, naming the operation and path.
std::exception_ptr zookeeper_error(int code, std::string_view operation, const std::string& path);

/// Throws zookeeper_error(code, operation, path).
[[noreturn]] void throw_zookeeper_error(int code, std::string_view operation,
                                        const std::string& path);

/// True for codes after which the outcome of a write is unknown or the session is gone
/// (connection loss, operation timeout, session expiry, closing): not a reply about the node.
bool is_connection_level(int code);

}  // namespace avout::detail
