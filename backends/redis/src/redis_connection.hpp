#pragma once
// The one owner of hiredis handles: a connection, its replies, and a small pool. hiredis
// errors are translated here, naming the store, command and key, never a password: an I/O
// error (refused, lost, timed out) is StoreUnavailable, an error reply StoreRefused.

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
  /// Runs one command; throws StoreUnavailable on I/O errors (the connection is then
  /// broken), StoreRefused on an error reply.
  Reply command(const std::vector<std::string_view>& arguments, std::string_view key);
  /// Sends every command, then reads every reply: one round trip. Error replies are returned
  /// as they are (the caller judges them); I/O errors throw StoreUnavailable naming `what`.
  std::vector<Reply> pipeline(const std::vector<std::vector<std::string_view>>& commands,
                              std::string_view what);
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
  /// Runs Connection::pipeline on a pooled connection.
  std::vector<Reply> pipeline(const std::vector<std::vector<std::string_view>>& commands,
                              std::string_view what);
  const Endpoint& endpoint() const { return endpoint_; }

 private:
  // Runs `work` on an idle connection (or a new one), returned to the pool unless broken.
  template <typename Work>
  auto with_connection(Work&& work);

  Endpoint endpoint_;
  std::size_t keep_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Connection>> idle_;
};

}  // namespace avout::redis::detail
