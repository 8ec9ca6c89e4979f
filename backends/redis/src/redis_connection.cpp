#include "redis_connection.hpp"

#include <avout/errors.hpp>


namespace avout::redis::detail {

namespace {

timeval to_timeval(std::chrono::milliseconds duration) {
  return timeval{static_cast<time_t>(duration.count() / 1000),
                 static_cast<suseconds_t>((duration.count() % 1000) * 1000)};
}

[[noreturn]] void throw_backend_error(const Endpoint& endpoint, std::string_view command,
                                      std::string_view key, std::string_view problem) {
  std::string message = endpoint.description + ": " + std::string(command);
  if (!key.empty()) message += " " + std::string(key);
  message += ": " + std::string(problem);
  throw BackendError(message);
}

}  // namespace

Connection::Connection(const Endpoint& endpoint) : endpoint_(endpoint) {
  const timeval connect_timeout = to_timeval(endpoint.connect_timeout);
  context_.reset(endpoint.socket_path.empty()
                     ? redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port, connect_timeout)
                     : redisConnectUnixWithTimeout(endpoint.socket_path.c_str(), connect_timeout));
  if (!context_) throw_backend_error(endpoint, "connect", "", "out of memory");
  if (context_->err) throw_backend_error(endpoint, "connect", "", context_->errstr);
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
    throw_backend_error(endpoint_, name, key,
                        context_->err ? context_->errstr : "no reply (connection lost)");
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    throw_backend_error(endpoint_, name, key, std::string_view(reply->str, reply->len));
  }
  return reply;
}

Reply Pool::command(const std::vector<std::string_view>& arguments, std::string_view key) {
  std::unique_ptr<Connection> connection;
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      connection = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (!connection) connection = std::make_unique<Connection>(endpoint_);
  Reply reply;
  try {
    reply = connection->command(arguments, key);
  } catch (...) {
    if (!connection->broken()) {
      std::lock_guard lock(mutex_);
      if (idle_.size() < keep_) idle_.push_back(std::move(connection));
    }
    throw;
  }
  std::lock_guard lock(mutex_);
  if (idle_.size() < keep_) idle_.push_back(std::move(connection));
  return reply;
}

}  // namespace avout::redis::detail
