#include "redis_connection.hpp"

#include <avout/errors.hpp>

namespace avout::redis::detail {

namespace {

timeval to_timeval(std::chrono::milliseconds duration) {
  return timeval{static_cast<time_t>(duration.count() / 1000),
                 static_cast<suseconds_t>((duration.count() % 1000) * 1000)};
}

std::string message_of(const Endpoint& endpoint, std::string_view command, std::string_view key,
                       std::string_view problem) {
  std::string message = endpoint.description + ": " + std::string(command);
  if (!key.empty()) message += " " + std::string(key);
  return message + ": " + std::string(problem);
}

// No reply: the server was not reached or the reply was lost, so a write may have landed.
[[noreturn]] void throw_unavailable(const Endpoint& endpoint, std::string_view command,
                                    std::string_view key, std::string_view problem) {
  throw StoreUnavailable(message_of(endpoint, command, key, problem));
}

// An error reply: the server answered and did not apply the command.
[[noreturn]] void throw_refused(const Endpoint& endpoint, std::string_view command,
                                std::string_view key, std::string_view problem) {
  throw StoreRefused(message_of(endpoint, command, key, problem));
}

}  // namespace

Connection::Connection(const Endpoint& endpoint) : endpoint_(endpoint) {
  const timeval connect_timeout = to_timeval(endpoint.connect_timeout);
  context_.reset(
      endpoint.socket_path.empty()
          ? redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port, connect_timeout)
          : redisConnectUnixWithTimeout(endpoint.socket_path.c_str(), connect_timeout));
  if (!context_) throw_unavailable(endpoint, "connect", "", "out of memory");
  if (context_->err) throw_unavailable(endpoint, "connect", "", context_->errstr);
  redisSetTimeout(context_.get(), to_timeval(endpoint.command_timeout));
  // AUTH with a user is Redis 6's ACL form; without one it is the old requirepass form.
  if (!endpoint.password.empty() && !endpoint.user.empty()) {
    command({"AUTH", endpoint.user, endpoint.password}, "");
  } else if (!endpoint.password.empty()) {
    command({"AUTH", endpoint.password}, "");
  }
  if (endpoint.database != 0) command({"SELECT", std::to_string(endpoint.database)}, "");
}

Reply Connection::command(const std::vector<std::string_view>& arguments, std::string_view key) {
  std::vector<const char*> pointers;
  std::vector<std::size_t> lengths;
  for (auto argument : arguments) {
    pointers.push_back(argument.data());
    lengths.push_back(argument.size());
  }
  // AUTH's argument is the password: name the command only.
  const std::string_view name = arguments.empty() ? "" : arguments.front();
  Reply reply(static_cast<redisReply*>(redisCommandArgv(
      context_.get(), static_cast<int>(arguments.size()), pointers.data(), lengths.data())));
  if (!reply) {
    broken_ = true;
    throw_unavailable(endpoint_, name, key,
                      context_->err ? context_->errstr : "no reply (connection lost)");
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    throw_refused(endpoint_, name, key, std::string_view(reply->str, reply->len));
  }
  return reply;
}

std::vector<Reply> Connection::pipeline(const std::vector<std::vector<std::string_view>>& commands,
                                        std::string_view what) {
  for (const auto& arguments : commands) {
    std::vector<const char*> pointers;
    std::vector<std::size_t> lengths;
    for (auto argument : arguments) {
      pointers.push_back(argument.data());
      lengths.push_back(argument.size());
    }
    // Only buffers the command: nothing is sent before the first reply is asked for.
    if (redisAppendCommandArgv(context_.get(), static_cast<int>(arguments.size()), pointers.data(),
                               lengths.data()) != REDIS_OK) {
      broken_ = true;
      throw_unavailable(endpoint_, what, "", context_->err ? context_->errstr : "out of memory");
    }
  }
  std::vector<Reply> replies;
  replies.reserve(commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(context_.get(), &raw) != REDIS_OK || raw == nullptr) {
      broken_ = true;
      throw_unavailable(endpoint_, what, "",
                        context_->err ? context_->errstr : "no reply (connection lost)");
    }
    replies.emplace_back(static_cast<redisReply*>(raw));
  }
  return replies;
}

template <typename Work>
auto Pool::with_connection(Work&& work) {
  std::unique_ptr<Connection> connection;
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      connection = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (!connection) connection = std::make_unique<Connection>(endpoint_);
  auto give_back = [&] {
    if (connection->broken()) return;
    std::lock_guard lock(mutex_);
    if (idle_.size() < keep_) idle_.push_back(std::move(connection));
  };
  try {
    auto result = work(*connection);
    give_back();
    return result;
  } catch (...) {
    give_back();
    throw;
  }
}

Reply Pool::command(const std::vector<std::string_view>& arguments, std::string_view key) {
  return with_connection(
      [&](Connection& connection) { return connection.command(arguments, key); });
}

std::vector<Reply> Pool::pipeline(const std::vector<std::vector<std::string_view>>& commands,
                                  std::string_view what) {
  return with_connection(
      [&](Connection& connection) { return connection.pipeline(commands, what); });
}

}  // namespace avout::redis::detail
