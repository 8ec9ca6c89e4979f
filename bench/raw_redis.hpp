#pragma once
// A bare hiredis connection for the floors and the Redis peers: no avout in between.

#include <hiredis/hiredis.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace avout::bench {

class RawRedis {
 public:
  struct ReplyDeleter {
    void operator()(redisReply* reply) const { freeReplyObject(reply); }
  };
  using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

  /// Connects to "redis://host:port" (or tcp://host:port): the fixture's plain URLs.
  explicit RawRedis(const std::string& url) {
    const auto start = url.find("://") + 3;
    const auto colon = url.rfind(':');
    const std::string host = url.substr(start, colon - start);
    context_.reset(redisConnect(host.c_str(), std::stoi(url.substr(colon + 1))));
    if (!context_ || context_->err) throw std::runtime_error("raw redis: cannot connect to " + url);
  }
  /// Runs one command; throws on an error reply or a broken connection.
  Reply command(const std::vector<std::string>& arguments) {
    std::vector<const char*> pointers;
    std::vector<std::size_t> lengths;
    for (const auto& argument : arguments) {
      pointers.push_back(argument.data());
      lengths.push_back(argument.size());
    }
    Reply reply(static_cast<redisReply*>(redisCommandArgv(
        context_.get(), static_cast<int>(arguments.size()), pointers.data(), lengths.data())));
    if (!reply || reply->type == REDIS_REPLY_ERROR) {
      throw std::runtime_error("raw redis: " + arguments.front() + " failed");
    }
    return reply;
  }

 private:
  struct ContextDeleter {
    void operator()(redisContext* context) const { redisFree(context); }
  };
  std::unique_ptr<redisContext, ContextDeleter> context_;
};

}  // namespace avout::bench
