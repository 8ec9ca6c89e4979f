#pragma once
// The one owner of hiredis handles: a connection, its replies, and a small pool. hiredis
// errors become avout::BackendError here, naming the store, command and key, never a password.

#include "redis_url.hpp"

#include <avout/bytes.hpp>

#include <hiredis/hiredis.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace avout::redis::detail {

struct ReplyDeleter {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
/// One reply, freed with its owner.
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

/// One hiredis connection. After any I/O error it is broken and must be thrown away.
class Connection {
 public:
  explicit Connection(const Endpoint& endpoint);
  /// Runs one command; throws BackendError on I/O errors and error replies.
  Reply command(const std::vector<std::string_view>& arguments, std::string_view key);
  bool broken() const { return broken_; }

 private:
  struct ContextDeleter {
    void operator()(redisContext* context) const { redisFree(context); }
  };
  const Endpoint& endpoint_;
  std::unique_ptr<redisContext, ContextDeleter> context_;
  bool broken_ = false;
};

/// Idle connections; I/O never happens under the lock.
class Pool {
 public:
  Pool(Endpoint endpoint, std::size_t keep) : endpoint_(std::move(endpoint)), keep_(keep) {}
  /// Runs one command on a pooled connection (a new one when none is idle).
  Reply command(const std::vector<std::string_view>& arguments, std::string_view key);
  const Endpoint& endpoint() const { return endpoint_; }

 private:
  Endpoint endpoint_;
  std::size_t keep_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Connection>> idle_;
};

}  // namespace avout::redis::detail
