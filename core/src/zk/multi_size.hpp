#pragma once
// What a ZooKeeper multi weighs as it is serialized, for the commits that grow one op by op
// (rule 11: a request over jute.maxbuffer, 1 MB by default, makes the server drop the
// connection, so a multi stays under multi_limit with a margin).

#include <avout/zookeeper_session.hpp>

#include <cstddef>
#include <variant>

namespace avout::detail {

/// The most a multi may weigh, counted by serialized_size.
inline constexpr std::size_t multi_limit = 960 * 1024;
/// What an op costs besides its path and data: op header, lengths, version, flags and ACL.
inline constexpr std::size_t op_overhead = 128;

/// The serialized size of an op with a path of `path` characters under a chroot of `chroot`
/// and `data` bytes of data.
inline std::size_t serialized_size(std::size_t path, std::size_t data, std::size_t chroot) {
  return op_overhead + chroot + path + data;
}

/// The serialized size of `operation`, its path under a chroot of `chroot` characters.
inline std::size_t serialized_size(const Operation& operation, std::size_t chroot) {
  return std::visit(
      [&](const auto& o) {
        std::size_t data = 0;
        if constexpr (requires { o.data; }) data = o.data.size();
        return serialized_size(o.path.size(), data, chroot);
      },
      operation);
}

}  // namespace avout::detail
