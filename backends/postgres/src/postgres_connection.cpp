#include "postgres_connection.hpp"

#include <avout/errors.hpp>

namespace avout::postgres::detail {

namespace {
// SQLSTATE of a statement cancelled by statement_timeout (or a cancel request).
constexpr const char* query_canceled = "57014";
}  // namespace

Pool::Pool(ConnectionString target, std::size_t keep,
           std::function<void(pqxx::connection&)> prepare)
    : target_(std::move(target)), keep_(keep), prepare_(std::move(prepare)) {}

template <typename Kind>
void Pool::fail(const std::string& what, const std::string& problem) const {
  throw Kind(target_.description + ": " + what + ": " + redacted(problem, target_.secrets));
}

std::unique_ptr<pqxx::connection> Pool::open() {
  auto connection = std::make_unique<pqxx::connection>(target_.conninfo);
  // A statement stuck behind a lock or a slow disk must not hold its caller forever.
  connection->set_variable("statement_timeout", std::to_string(target_.statement_timeout.count()));
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
    fail<StoreUnavailable>(what, std::string("connection lost: ") + error.what());
  } catch (const pqxx::in_doubt_error& error) {
    fail<StoreUnavailable>(what, std::string("outcome unknown: ") + error.what());
  } catch (const pqxx::statement_completion_unknown& error) {
    fail<StoreUnavailable>(what, std::string("outcome unknown: ") + error.what());
  } catch (const pqxx::sql_error& error) {
    // The server answered: the statement was not applied and the connection is still good.
    give_back(connection);
    if (error.sqlstate() == query_canceled) {
      // The server cancelled the statement (and rolled it back): it ran past statement_timeout.
      throw Timeout(target_.description + ": " + what + ": statement timeout (" +
                    std::to_string(target_.statement_timeout.count()) +
                    " ms) passed: " + redacted(error.what(), target_.secrets));
    }
    fail<StoreRefused>(what, error.what());
  } catch (const pqxx::transaction_rollback& error) {
    give_back(connection);
    fail<StoreRefused>(what, error.what());
  } catch (const pqxx::failure& error) {
    // Any other libpqxx failure is a connection that misbehaved: the outcome is not known.
    fail<StoreUnavailable>(what, error.what());
  }
  give_back(connection);
}

void Pool::give_back(std::unique_ptr<pqxx::connection>& connection) {
  std::lock_guard lock(mutex_);
  if (idle_.size() < keep_ && connection && connection->is_open()) {
    idle_.push_back(std::move(connection));
  }
}

}  // namespace avout::postgres::detail
