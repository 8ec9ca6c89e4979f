// Leases in PostgreSQL: one row per (lock name, key) in <prefix>leases, never deleted, so
// its token only grows (and never falls below the server's clock: token_floor). PostgreSQL's
// clock_timestamp() judges expiry: every statement compares expires_at with it on the server. Each
// operation is one autocommitted statement; ON CONFLICT DO UPDATE locks the conflicting row and
// re-checks the WHERE on its newest version, so two contenders for an expired lease cannot both
// take it.
#include "postgres_connection.hpp"

#include <avout/errors.hpp>
#include <avout/postgres.hpp>

#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <string_view>

namespace avout::postgres {

namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// A token is the row's plus one, but never below the server's clock in microseconds: a key
// whose row was lost (a restore, a failover to a replica that missed the last writes) still
// gets tokens above every earlier one, as long as the server's clock never went back.
constexpr std::string_view token_floor =
    "(extract(epoch from clock_timestamp()) * 1000000)::bigint";

// Concurrent CREATE TABLE IF NOT EXISTS can still collide in the catalog: retry a few times.
void create_table(pqxx::connection& connection, const std::string& table) {
  for (int attempt = 0;; ++attempt) {
    try {
      pqxx::work work(connection);
      work.exec("CREATE TABLE IF NOT EXISTS " + table +
                " (name text NOT NULL, key text NOT NULL, token bigint NOT NULL, "
                "holder text NOT NULL, expires_at timestamptz NOT NULL, PRIMARY KEY (name, key))");
      work.commit();
      return;
    } catch (const pqxx::sql_error&) {
      if (attempt >= 3) throw;
    }
  }
}

class PostgresLeaseStrategy final : public LeaseStrategy {
 public:
  PostgresLeaseStrategy(std::shared_ptr<detail::Pool> pool, std::string table, std::string name)
      : pool_(std::move(pool)),
        table_(std::move(table)),
        name_(std::move(name)),
        holder_(boost::uuids::to_string(boost::uuids::random_generator()())) {
    pool_->run("create table " + table_, [&](pqxx::connection& c) { create_table(c, table_); });
  }

  std::string description() const override { return pool_->description() + " lease lock " + name_; }

  std::optional<Lease> acquire(const std::string& key, milliseconds duration,
                               steady_clock::time_point deadline) override {
    const std::string sql =
        "INSERT INTO " + table_ +
        " AS l (name, key, token, holder, expires_at) "
        "VALUES ($1, $2, " +
        std::string(token_floor) +
        ", $3, "
        "clock_timestamp() + $4::bigint * interval '1 millisecond') "
        "ON CONFLICT (name, key) DO UPDATE SET token = GREATEST(l.token + 1, EXCLUDED.token), "
        "holder = EXCLUDED.holder, "
        "expires_at = EXCLUDED.expires_at WHERE l.expires_at <= clock_timestamp() "
        "RETURNING token";
    return avout::detail::poll_for_lease(deadline, [&](milliseconds&) {
      std::optional<Lease> lease;
      const auto sent = steady_clock::now();
      pool_->run("lease " + name_ + " key " + key, [&](pqxx::connection& c) {
        pqxx::nontransaction work(c);
        auto rows =
            work.exec_params(sql, name_, key, holder_, static_cast<long long>(duration.count()));
        if (!rows.empty()) {
          const auto token = static_cast<std::uint64_t>(rows[0][0].as<long long>());
          lease = Lease{key, token, sent + duration};
        }
      });
      return lease;
    });
  }

  bool release(const Lease& lease) override {
    // '-infinity' frees the key at once and keeps the token counter.
    return token_checked(lease, "release", "expires_at = '-infinity'::timestamptz", std::nullopt);
  }

  bool renew(Lease& lease, milliseconds duration) override {
    const auto sent = steady_clock::now();
    if (!token_checked(lease, "renew",
                       "expires_at = clock_timestamp() + $4::bigint * interval '1 millisecond'",
                       duration)) {
      return false;
    }
    lease.expires = sent + duration;
    return true;
  }

 private:
  // Applies `assignment` when the lease's token still holds the key and has not expired.
  bool token_checked(const Lease& lease, const char* what, const std::string& assignment,
                     std::optional<milliseconds> duration) {
    const std::string sql = "UPDATE " + table_ + " SET " + assignment +
                            " WHERE name = $1 AND key = $2 AND token = $3 "
                            "AND expires_at > clock_timestamp()";
    bool changed = false;
    pool_->run(
        std::string(what) + " lease " + name_ + " key " + lease.key, [&](pqxx::connection& c) {
          pqxx::nontransaction work(c);
          const auto token = static_cast<long long>(lease.token);
          const auto result = duration ? work.exec_params(sql, name_, lease.key, token,
                                                          static_cast<long long>(duration->count()))
                                       : work.exec_params(sql, name_, lease.key, token);
          changed = result.affected_rows() == 1;
        });
    return changed;
  }

  std::shared_ptr<detail::Pool> pool_;
  std::string table_;
  std::string name_;
  std::string holder_;  // who holds a key, for people reading the table
};

}  // namespace

LeaseLock lease_lock(Store& store, const std::string& name) {
  validate_lease_name(name);
  return LeaseLock(std::make_shared<PostgresLeaseStrategy>(
      store.shared_pool(), store.options().table_prefix + "leases", name));
}

}  // namespace avout::postgres
