// The peers, side by side with avout on the same workloads and servers: Redis WATCH/MULTI
// and PostgreSQL SERIALIZABLE transactions for the bank transfer, and Avout's 2011 recipe
// (avout_recipe.hpp) for deref and ref-set.
#include "avout_recipe.hpp"
#include "raw_redis.hpp"
#include "workloads.hpp"

#include <pqxx/pqxx>

#include <memory>
#include <random>
#include <vector>

namespace avout::bench {

namespace {

// One transfer with optimistic Redis transactions: WATCH, read, MULTI/EXEC, again on abort.
void redis_transfer(RawRedis& redis, const std::string& prefix, int from, int to, long amount) {
  const std::string a = prefix + std::to_string(from), b = prefix + std::to_string(to);
  while (true) {
    redis.command({"WATCH", a, b});
    auto balance_a = redis.command({"GET", a});
    auto balance_b = redis.command({"GET", b});
    const long x = std::stol(std::string(balance_a->str, balance_a->len));
    const long y = std::stol(std::string(balance_b->str, balance_b->len));
    redis.command({"MULTI"});
    redis.command({"SET", a, std::to_string(x - amount)});
    redis.command({"SET", b, std::to_string(y + amount)});
    auto done = redis.command({"EXEC"});
    if (done->type == REDIS_REPLY_ARRAY) return;  // nil: a watched key changed, run again
  }
}

// One transfer in a SERIALIZABLE PostgreSQL transaction, run again when PostgreSQL rolls it
// back (a serialization failure or a deadlock between the two row updates).
void postgres_transfer(pqxx::connection& connection, const std::string& table, int from, int to,
                       long amount) {
  while (true) {
    try {
      pqxx::transaction<pqxx::isolation_level::serializable> work(connection);
      const auto rows = work.exec("SELECT id, balance FROM " + table + " WHERE id IN (" +
                                  std::to_string(from) + "," + std::to_string(to) + ")");
      (void)rows;
      work.exec("UPDATE " + table + " SET balance = balance - " + std::to_string(amount) +
                " WHERE id = " + std::to_string(from));
      work.exec("UPDATE " + table + " SET balance = balance + " + std::to_string(amount) +
                " WHERE id = " + std::to_string(to));
      work.commit();
      return;
    } catch (const pqxx::transaction_rollback&) {  // serialization failure or deadlock
    }
  }
}

}  // namespace

void run_peer_workloads(const Settings& settings, const Servers& servers, const Floors& floors) {
  std::vector<Result> rows;
  const int n = settings.iterations(500);
  std::mt19937 random(7);
  const auto pick = pick_accounts;

  // The bank transfer: avout (refs in Redis), Redis WATCH/MULTI, PostgreSQL SERIALIZABLE.
  const std::string redis_prefix = "bench-bank-" + std::to_string(std::random_device{}()) + ":";
  const std::string table = "bench_bank_" + std::to_string(std::random_device{}() % 1000000);
  {
    RawRedis redis(servers.redis);
    for (int i = 0; i < bank_accounts; ++i)
      redis.command({"SET", redis_prefix + std::to_string(i), "1000"});
    pqxx::connection connection(servers.postgres);
    pqxx::work setup(connection);
    setup.exec("CREATE TABLE " + table + " (id int primary key, balance bigint)");
    setup.exec("INSERT INTO " + table + " SELECT g, 1000 FROM generate_series(0, " +
               std::to_string(bank_accounts - 1) + ") g");
    setup.commit();
  }
  const std::string avout_bank = unique_name("peer-bank");
  auto avout_accounts = [&](Stores& stores) {
    std::vector<Ref<long>> refs;
    for (int i = 0; i < bank_accounts; ++i) {
      refs.push_back(stores.client.ref<long>(avout_bank + "/" + std::to_string(i), 1000,
                                             stores.store("redis")));
    }
    return refs;
  };
  {
    Stores stores(servers);
    auto refs = avout_accounts(stores);
    Result row = summarize("bank transfer, 1 process: avout (Redis refs)",
                           measure_client(stores.client, n, [&] {
                             auto [from, to] = pick(random);
                             transfer(stores.client, refs[from], refs[to]);
                           }));
    row.floor_ms = floors.zookeeper_multi;
    row.floor_name = "zookeeper multi";
    rows.push_back(row);
  }
  {
    RawRedis redis(servers.redis);
    Result row = summarize("bank transfer, 1 process: Redis WATCH/MULTI", time_each(n, [&] {
                             auto [from, to] = pick(random);
                             redis_transfer(redis, redis_prefix, from, to, 1);
                           }));
    row.floor_ms = floors.redis_get_set;
    row.floor_name = "redis get+set";
    rows.push_back(row);
    pqxx::connection connection(servers.postgres);
    row = summarize("bank transfer, 1 process: PostgreSQL SERIALIZABLE", time_each(n, [&] {
                      auto [from, to] = pick(random);
                      postgres_transfer(connection, table, from, to, 1);
                    }));
    row.floor_ms = floors.postgres_get_set;
    row.floor_name = "postgres get+set";
    rows.push_back(row);
  }
  const int per_process = settings.iterations(200);
  Result contended =
      run_processes("bank transfer, 8 processes: avout (Redis refs)", 8, [&](int index) {
        Stores stores(servers);
        auto refs = avout_accounts(stores);
        std::mt19937 own(static_cast<unsigned>(index) + 100);
        return measure_client(stores.client, per_process, [&] {
          auto [from, to] = pick(own);
          transfer(stores.client, refs[from], refs[to]);
        });
      });
  contended.floor_ms = floors.zookeeper_multi;
  contended.floor_name = "zookeeper multi";
  rows.push_back(contended);
  {
    // etcd's peer runs its 8 clients in one process: so does this row, a client (its own
    // session and store connections) per thread; the next shares one client, as a service
    // usually would.
    std::vector<std::unique_ptr<Stores>> owned;
    std::vector<Stores*> clients;
    std::vector<std::vector<Ref<long>>> accounts;
    for (int c = 0; c < 8; ++c) {
      owned.push_back(std::make_unique<Stores>(servers));
      clients.push_back(owned.back().get());
      accounts.push_back(avout_accounts(*owned.back()));
    }
    for (const bool shared : {false, true}) {
      const std::vector<Stores*> used = shared ? std::vector<Stores*>{clients.front()} : clients;
      Result row =
          threaded_bank(shared ? "bank transfer, 1 client, 8 threads: avout (Redis refs)"
                               : "bank transfer, 8 clients in 1 process: avout (Redis refs)",
                        used, accounts, 8, per_process, pick);
      row.floor_ms = floors.zookeeper_multi;
      row.floor_name = "zookeeper multi";
      rows.push_back(row);
    }
  }
  contended = run_processes("bank transfer, 8 processes: Redis WATCH/MULTI", 8, [&](int index) {
    RawRedis redis(servers.redis);
    std::mt19937 own(static_cast<unsigned>(index) + 200);
    return measure_window(per_process, [&] {
      auto [from, to] = pick(own);
      redis_transfer(redis, redis_prefix, from, to, 1);
    });
  });
  contended.floor_ms = floors.redis_get_set;
  contended.floor_name = "redis get+set";
  rows.push_back(contended);
  contended =
      run_processes("bank transfer, 8 processes: PostgreSQL SERIALIZABLE", 8, [&](int index) {
        pqxx::connection connection(servers.postgres);
        std::mt19937 own(static_cast<unsigned>(index) + 300);
        return measure_window(per_process, [&] {
          auto [from, to] = pick(own);
          postgres_transfer(connection, table, from, to, 1);
        });
      });
  contended.floor_ms = floors.postgres_get_set;
  contended.floor_name = "postgres get+set";
  rows.push_back(contended);

  // Deref and ref-set: avout against Avout's 2011 recipe, ZooKeeper-held values.
  {
    Stores stores(servers);
    auto ref = stores.client.ref<long>(unique_name("peer-ref"), 1);
    Result row = summarize("deref outside dosync: avout",
                           measure_client(stores.client, n, [&] { (void)ref.deref(); }));
    row.floor_ms = floors.zookeeper_get;
    row.floor_name = "zookeeper get";
    rows.push_back(row);
    AvoutRecipe recipe(stores.client.session(), 8);
    row = summarize("deref outside dosync: Avout 2011 recipe",
                    measure_client(stores.client, n, [&] { recipe.deref(); }));
    row.floor_ms = floors.zookeeper_get;
    row.floor_name = "zookeeper get";
    rows.push_back(row);

    // ref-set of k refs in one dosync, k = 1 and 8: avout beside the recipe.
    const std::string avout_refs = unique_name("peer-refs");
    for (const std::size_t k : {std::size_t{1}, std::size_t{8}}) {
      std::vector<Ref<long>> refs;
      for (std::size_t i = 0; i < k; ++i)
        refs.push_back(stores.client.ref<long>(avout_refs + "/" + std::to_string(i), 1));
      const std::string label = "ref-set in dosync, k=" + std::to_string(k) + ": ";
      row = summarize(label + "avout", measure_client(stores.client, n, [&] {
                        stores.client.dosync([&] {
                          for (auto& each : refs) each.ref_set(2);
                        });
                      }));
      row.floor_ms = floors.zookeeper_multi;
      row.floor_name = "zookeeper multi";
      rows.push_back(row);
      row = summarize(label + "Avout 2011 recipe", measure_client(stores.client, k == 1 ? n : n / 4,
                                                                  [&] { recipe.ref_set(k); }));
      row.floor_ms = floors.zookeeper_multi;
      row.floor_name = "zookeeper multi";
      rows.push_back(row);
    }
  }
  print_table("peers: the same workloads without avout, and with Avout's 2011 recipe", rows);
}

}  // namespace avout::bench
