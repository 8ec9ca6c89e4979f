#include "postgres_connection.hpp"

#include <avout/errors.hpp>

namespace avout::postgres::detail {

std::string redact(const std::string& url) {
  // postgresql://user:password@host... -> postgresql://user:***@host...
  const auto scheme = url.find("://");
  const auto at = url.find('@');
  if (scheme == std::string::npos || at == std::string::npos) return url;
  const auto colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

Pool::Pool(std::string url, std::size_t keep, std::function<void(pqxx::connection&)> prepare)
    : url_(std::move(url)),
      description_("postgres " + redact(url_)),
      keep_(keep),
      prepare_(std::move(prepare)) {}

std::unique_ptr<pqxx::connection> Pool::open() {
  auto connection = std::make_unique<pqxx::connection>(url_);
  prepare_(*connection);
  return connection;
}

void Pool::run(const std::string& what, const std::function<void(pqxx::connection&)>& work) {
  std::unique_ptr<pqxx::connection> connection;
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      connection = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  try {
    if (!connection) connection = open();
    work(*connection);
  } catch (const pqxx::broken_connection& error) {
    // Thrown away: the next call opens a fresh connection.
    throw BackendError(description_ + ": " + what + ": connection lost: " + redact(error.what()));
  } catch (const pqxx::in_doubt_error& error) {
    throw BackendError(description_ + ": " + what + ": outcome unknown: " + redact(error.what()));
  } catch (const pqxx::sql_error& error) {
    std::lock_guard lock(mutex_);
    if (idle_.size() < keep_ && connection && connection->is_open()) idle_.push_back(std::move(connection));
    throw BackendError(description_ + ": " + what + ": " + redact(error.what()));
  } catch (const pqxx::failure& error) {
    throw BackendError(description_ + ": " + what + ": " + redact(error.what()));
  }
  std::lock_guard lock(mutex_);
  if (idle_.size() < keep_) idle_.push_back(std::move(connection));
}

}  // namespace avout::postgres::detail
