#pragma once
// The one owner of libpqxx connections: a pool that throws a broken connection away (libpqxx
// 6's reactivation is unreliable) and the translation of pqxx exceptions, with the password
// stripped from every message: no answer (broken connection, in doubt) is StoreUnavailable,
// an error the server answered with is StoreRefused.

#include "postgres_url.hpp"

#include <pqxx/pqxx>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace avout::postgres::detail {

class Pool {
 public:
  /// `prepare` runs once on each new connection (table creation).
  Pool(ConnectionString target, std::size_t keep, std::function<void(pqxx::connection&)> prepare);
  /// Runs `work` on a pooled connection; pqxx errors become StoreUnavailable or StoreRefused
  /// naming `what`, a statement cancelled by the connection string's statement_timeout Timeout.
  void run(const std::string& what, const std::function<void(pqxx::connection&)>& work);
  const std::string& description() const { return target_.description; }
  /// The store name the connection string gives (name=); empty when none.
  const std::string& store_name() const { return target_.name; }

 private:
  std::unique_ptr<pqxx::connection> open();
  // Keeps an open connection for the next call (when fewer than `keep_` are idle).
  void give_back(std::unique_ptr<pqxx::connection>& connection);
  template <typename Kind>
  [[noreturn]] void fail(const std::string& what, const std::string& problem) const;

  ConnectionString target_;
  std::size_t keep_;
  std::function<void(pqxx::connection&)> prepare_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
};

}  // namespace avout::postgres::detail
