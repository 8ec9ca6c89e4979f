#include "redis_connection.hpp"

#include <avout/errors.hpp>

#include <charconv>

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

Endpoint parse_url(const std::string& url) {
  constexpr std::string_view scheme = "tcp://";
  if (url.rfind(scheme, 0) != 0) throw InvalidName("redis url must start with tcp://");
  Endpoint endpoint;
  std::string rest = url.substr(scheme.size());
  if (const auto at = rest.rfind('@'); at != std::string::npos) {
    const std::string credentials = rest.substr(0, at);
    endpoint.password = credentials.substr(credentials.find(':') == std::string::npos ? 0 : credentials.find(':') + 1);
    rest = rest.substr(at + 1);
  }
  const auto colon = rest.rfind(':');
  endpoint.host = rest.substr(0, colon);
  if (colon != std::string::npos) {
    const std::string port = rest.substr(colon + 1);
    auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), endpoint.port);
    if (error != std::errc() || end != port.data() + port.size() || endpoint.port <= 0) {
      throw InvalidName("redis url has a bad port: " + port);
    }
  }
  if (endpoint.host.empty()) throw InvalidName("redis url has no host");
  endpoint.description = "redis " + endpoint.host + ":" + std::to_string(endpoint.port);
  return endpoint;
}

Connection::Connection(const Endpoint& endpoint) : endpoint_(endpoint) {
  context_.reset(redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port,
                                         to_timeval(endpoint.connect_timeout)));
  if (!context_) throw_backend_error(endpoint, "connect", "", "out of memory");
  if (context_->err) throw_backend_error(endpoint, "connect", "", context_->errstr);
  redisSetTimeout(context_.get(), to_timeval(endpoint.command_timeout));
  if (!endpoint.password.empty()) command({"AUTH", endpoint.password}, "");
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
