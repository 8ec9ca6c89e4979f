// Read-write transactions over k refs, avout beside etcd's STM and the raw floor, ref-set in a
// transaction beside Avout's 2011 recipe, read-only transactions over 8 refs and transactions
// that read 100 refs and write 1 (the read set a serializable commit checks), measured in
// alternating rounds. Rows measured one after another drift apart with the machine (the
// servers' compilers, their logs, whatever else runs): in one run the same workload measured
// minutes apart differed by a third. Here every round runs every row for a slice of its
// operations, so drift lands on all rows alike, and each round compares avout with etcd under
// the same conditions.
#include "avout_recipe.hpp"
#include "external_peers.hpp"
#include "raw_redis.hpp"
#include "workloads.hpp"

#include <avout/zookeeper_session.hpp>

#include <pqxx/pqxx>

#include <algorithm>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace avout::bench {

namespace {

constexpr int ks[] = {1, 2, 4, 8};

// The rows of a client in snapshot isolation (a read point in every attempt): what validated
// attempts save, measured in the same rounds.
constexpr int usual_ks[] = {1, 8};
const std::string usual_where = "zookeeper, read point each attempt";

std::string row_name(int k, const std::string& who) {
  return "rounds: read-write txn, k=" + std::to_string(k) + ": " + who;
}

std::string ref_set_name(std::size_t k, const std::string& who) {
  return "rounds: ref-set in dosync, k=" + std::to_string(k) + ": " + who;
}

// The rows beyond read-write over k: `shape` is read_only or read_many.
const std::string read_only = "read-only txn, k=8";
const std::string read_many = "read 100 refs, write 1";
constexpr int read_many_refs = 100;

std::string shape_name(const std::string& shape, const std::string& who) {
  return "rounds: " + shape + ": " + who;
}

// Their floors: a get for a read-only transaction (one round trip), a get and a multi that
// checks 100 versions and sets one node for the other.
std::string shape_floor_name(const std::string& shape) {
  return shape == read_only ? "rounds: floor: zookeeper get"
                            : "rounds: floor: zookeeper get + multi of 100 checks and 1 set";
}

std::string floor_name(int k, const std::string& store) {
  return "rounds: floor, k=" + std::to_string(k) + ": zookeeper get + " +
         (store == "zookeeper" ? "" : store + " write of k + ") + "multi of k";
}

// The store whose write a transaction over k refs placed at `where` waits for longest (the
// floor's write): "mixed" places refs round-robin over zookeeper, redis, postgres.
std::string slowest_store(const std::string& where, int k) {
  if (where != mixed) return where;
  return k >= 3 ? "postgres" : k == 2 ? "redis" : "zookeeper";
}

// Every row's latencies and client counters, all rounds together, and each round's p50.
struct Tally {
  std::map<std::string, ProcessReport> reports;
  std::map<std::string, std::vector<double>> round_p50s;
  void add(const std::string& row, const ProcessReport& measured) {
    round_p50s[row].push_back(median(measured.latencies_ms));
    auto& all = reports[row];
    all.latencies_ms.insert(all.latencies_ms.end(), measured.latencies_ms.begin(),
                            measured.latencies_ms.end());
    all.zookeeper_requests += measured.zookeeper_requests;
    all.zookeeper_round_trips += measured.zookeeper_round_trips;
    all.retries += measured.retries;
  }
  void add(const std::string& row, std::vector<double> latencies_ms) {
    ProcessReport measured;
    measured.latencies_ms = std::move(latencies_ms);
    add(row, measured);
  }
  // The row over all rounds (counters per operation).
  Result summary(const std::string& row) const { return summarize(row, reports.at(row)); }
};

// The raw round trips a read-write transaction over k refs cannot do without: a get, the
// values' write to their store (none for ZooKeeper-held values, which ride in the multi),
// and a multi setting k nodes.
class RawFloor {
 public:
  explicit RawFloor(const Servers& servers)
      : session_(SessionOptions{.hosts = servers.zookeeper}),
        redis_(servers.redis),
        postgres_(servers.postgres),
        base_(unique_name("rounds-floor")),
        table_("bench_rounds_" + std::to_string(std::random_device{}() % 1000000)) {
    for (int i = 0; i < 8; ++i) session_.create_recursive(base_ + "/" + std::to_string(i));
    std::vector<std::future<std::string>> created;
    for (int i = 0; i < read_many_refs; ++i)
      created.push_back(session_.create_async(checked(i), {}, CreateMode::persistent));
    for (auto& each : created) session_.wait(each);
    pqxx::work setup(postgres_);
    setup.exec("CREATE TABLE " + table_ + " (id bigserial primary key, value bigint)");
    setup.commit();
  }

  void once(int k, const std::string& store) {
    (void)session_.get(base_ + "/0");
    if (store == "redis") {
      std::vector<std::string> mset{"MSET"};
      for (int i = 0; i < k; ++i) {
        mset.push_back(base_ + ":" + std::to_string(i));
        mset.push_back("12345678");
      }
      redis_.command(mset);
    } else if (store == "postgres") {
      std::string rows;
      for (int i = 0; i < k; ++i) rows += std::string(i ? "," : "") + "(12345678)";
      pqxx::nontransaction statement(postgres_);
      statement.exec("INSERT INTO " + table_ + " (value) VALUES " + rows);
    }
    std::vector<Operation> sets;
    for (int i = 0; i < k; ++i)
      sets.push_back(op::SetData{base_ + "/" + std::to_string(i), Bytes(8, 1), -1});
    session_.multi(sets);
  }

  // The floor of `shape` (see shape_floor_name).
  void once(const std::string& shape) {
    (void)session_.get(base_ + "/0");
    if (shape == read_only) return;
    std::vector<Operation> operations;
    for (int i = 0; i < read_many_refs; ++i) operations.push_back(op::Check{checked(i), 0});
    operations.push_back(op::SetData{base_ + "/0", Bytes(8, 1), -1});
    session_.multi(operations).throw_if_failed(operations);
  }

 private:
  // The node number `i` of the floor's checks (never changed: version 0).
  std::string checked(int i) const { return base_ + "/0/" + std::to_string(i); }

  ZooKeeperSession session_;
  RawRedis redis_;
  pqxx::connection postgres_;
  std::string base_;
  std::string table_;
};

// avout's side: refs placed at `where`, k of them, altered in one dosync.
struct AvoutRow {
  std::string where;
  int k;
  std::vector<Ref<long>> refs;
};

// Per round, the p50 of one row over another's: the median, the extremes, and in how many
// rounds the first was the lower.
void print_round_comparison(const Tally& tally, const std::vector<std::string>& placements,
                            int rounds, bool with_etcd) {
  std::printf(
      "\n== rounds: one row's p50 over another's, per round (median [min, max] of %d rounds) ==\n",
      rounds);
  auto ratios = [&](const std::string& label, const std::string& mine, const std::string& theirs) {
    const auto& a = tally.round_p50s.at(mine);
    const auto& b = tally.round_p50s.at(theirs);
    std::vector<double> each;
    int lower = 0;
    for (std::size_t r = 0; r < a.size() && r < b.size(); ++r) {
      each.push_back(a[r] / b[r]);
      if (a[r] < b[r]) ++lower;
    }
    std::printf("  %-52s %5.2f [%4.2f, %4.2f]  lower in %d of %zu\n", label.c_str(), median(each),
                *std::min_element(each.begin(), each.end()),
                *std::max_element(each.begin(), each.end()), lower, each.size());
  };
  for (const auto& where : placements) {
    for (int k : ks) {
      const std::string slowest = slowest_store(where, k);
      ratios("k=" + std::to_string(k) + ", avout " + where + " / floor (" + slowest + ")",
             row_name(k, "avout, " + where), floor_name(k, slowest));
    }
  }
  for (const auto& where : placements) {
    ratios("avout " + where + ", k=8 / k=1", row_name(8, "avout, " + where),
           row_name(1, "avout, " + where));
  }
  for (int k : usual_ks) {
    ratios("k=" + std::to_string(k) + ", avout zookeeper / " + usual_where,
           row_name(k, "avout, zookeeper"), row_name(k, "avout, " + usual_where));
  }
  for (const std::size_t k : {std::size_t{1}, std::size_t{8}}) {
    ratios("ref-set k=" + std::to_string(k) + ", Avout 2011 recipe / avout",
           ref_set_name(k, "Avout 2011 recipe"), ref_set_name(k, "avout"));
  }
  for (const auto& shape : {read_only, read_many}) {
    ratios(shape + ", avout zookeeper / floor", shape_name(shape, "avout, zookeeper"),
           shape_floor_name(shape));
    if (!with_etcd) continue;
    for (const std::string isolation : {"serializable", "default"}) {
      ratios(shape + ", avout zookeeper / etcd STM " + isolation,
             shape_name(shape, "avout, zookeeper"), shape_name(shape, "etcd STM " + isolation));
    }
  }
  if (with_etcd) {
    for (const std::string where : {"zookeeper", "redis"}) {
      for (int k : ks) {
        for (const std::string isolation : {"serializable", "default"}) {
          ratios("k=" + std::to_string(k) + ", avout " + where + " / etcd STM " + isolation,
                 row_name(k, "avout, " + where), row_name(k, "etcd STM " + isolation));
        }
      }
    }
  }
  std::fflush(stdout);
}

// Every row over all rounds, each avout and etcd row beside the floor of the same k.
std::vector<Result> summary_rows(const Tally& tally, const std::vector<AvoutRow>& avout,
                                 const std::vector<AvoutRow>& usual) {
  std::vector<Result> rows;
  auto beside_floor = [&](const std::string& row, int k, const std::string& store) {
    Result result = tally.summary(row);
    result.floor_ms = tally.summary(floor_name(k, store)).p50_ms;
    result.floor_name = "floor, " + store;
    rows.push_back(result);
  };
  for (int k : ks) {
    for (const std::string store : {"zookeeper", "redis", "postgres"}) {
      rows.push_back(tally.summary(floor_name(k, store)));
    }
    for (const auto& row : avout) {
      if (row.k == k)
        beside_floor(row_name(k, "avout, " + row.where), k, slowest_store(row.where, k));
    }
    for (const auto& row : usual) {
      if (row.k == k) beside_floor(row_name(k, "avout, " + row.where), k, "zookeeper");
    }
    for (const std::string isolation : {"serializable", "default"}) {
      const std::string name = row_name(k, "etcd STM " + isolation);
      if (tally.reports.count(name) != 0) beside_floor(name, k, "zookeeper");
    }
  }
  for (const std::size_t k : {std::size_t{1}, std::size_t{8}}) {
    for (const std::string who : {"avout", "Avout 2011 recipe"}) {
      beside_floor(ref_set_name(k, who), static_cast<int>(k), "zookeeper");
    }
  }
  for (const auto& shape : {read_only, read_many}) {
    const std::string floor = shape_floor_name(shape);
    rows.push_back(tally.summary(floor));
    for (const std::string who :
         {"avout, zookeeper", "etcd STM serializable", "etcd STM default"}) {
      const std::string name = shape_name(shape, who);
      if (tally.reports.count(name) == 0) continue;
      Result result = tally.summary(name);
      result.floor_ms = tally.summary(floor).p50_ms;
      result.floor_name = "floor, " + floor.substr(floor.rfind(": ") + 2);
      rows.push_back(result);
    }
  }
  return rows;
}

}  // namespace

void run_interleaved_rounds(const Settings& settings, const Servers& servers,
                            const EtcdPeer* etcd) {
  const int rounds = settings.quick ? 2 : 10;
  const int per_round = std::max(10, settings.iterations(500) / rounds);
  Stores stores(servers);
  RawFloor raw(servers);
  std::vector<AvoutRow> avout;
  const std::vector<std::string> wheres = placements(servers);
  for (const auto& where : wheres) {
    for (int k : ks) {
      AvoutRow row{where, k, {}};
      const std::string prefix = unique_name("rounds-" + where);
      for (int i = 0; i < k; ++i) {
        row.refs.push_back(stores.client.ref<long>(prefix + "/" + std::to_string(i), 1000,
                                                   stores.store(where, i)));
      }
      avout.push_back(std::move(row));
    }
  }
  // A root of its own: its commits move a clock of their own and do not break the runs of
  // own commits whose kept heads the other rows' validated attempts read.
  ClientOptions usual_options{
      .hosts = servers.zookeeper, .root = "/avout-usual", .isolation = Isolation::snapshot};
  Client usual(usual_options);
  std::vector<AvoutRow> usual_rows;
  for (int k : usual_ks) {
    AvoutRow row{usual_where, k, {}};
    const std::string prefix = unique_name("rounds-usual");
    for (int i = 0; i < k; ++i)
      row.refs.push_back(usual.ref<long>(prefix + "/" + std::to_string(i), 1000));
    usual_rows.push_back(std::move(row));
  }
  auto commit_by = [](Client& client, AvoutRow& row) {
    client.dosync([&] {
      for (auto& ref : row.refs) ref.alter([](long v) { return v + 1; });
    });
  };
  auto commit = [&](AvoutRow& row) { commit_by(stores.client, row); };
  for (auto& row : usual_rows) commit_by(usual, row);
  for (auto& row : avout) commit(row);  // heads and tags cached from here on
  // The recipe's trimming removes the state nodes a transaction's refs share once its first
  // ref moves on: the k=1 and k=8 transactions get refs of their own.
  std::map<std::size_t, std::unique_ptr<AvoutRecipe>> recipes;
  std::map<std::size_t, std::vector<Ref<long>>> ref_set_refs;
  for (const std::size_t k : {std::size_t{1}, std::size_t{8}}) {
    recipes[k] = std::make_unique<AvoutRecipe>(stores.client.session(), k);
    const std::string prefix = unique_name("rounds-ref-set");
    for (std::size_t i = 0; i < k; ++i)
      ref_set_refs[k].push_back(stores.client.ref<long>(prefix + "/" + std::to_string(i), 1));
  }
  // The read-only refs and the 100 read ones, ZooKeeper-held values (each warmed by a commit).
  std::map<std::string, std::vector<Ref<long>>> shape_refs;
  for (const auto& [shape, count] :
       {std::pair{read_only, 8}, std::pair{read_many, read_many_refs}}) {
    const std::string prefix = unique_name("rounds-shape");
    for (int i = 0; i < count; ++i) {
      shape_refs[shape].push_back(stores.client.ref<long>(prefix + "/" + std::to_string(i), 1000,
                                                          stores.store("zookeeper")));
    }
  }
  auto run_shape = [&](const std::string& shape) {
    auto& refs = shape_refs[shape];
    return stores.client.dosync([&] {
      long sum = 0;
      for (auto& ref : refs) sum += ref.deref();
      if (shape == read_many) refs.front().alter([](long v) { return v + 1; });
      return sum;
    });
  };
  for (const auto& shape : {read_only, read_many}) {
    stores.client.dosync([&] {
      for (auto& ref : shape_refs[shape]) ref.alter([](long v) { return v + 1; });
    });
  }
  auto ref_set = [&](std::size_t k) {
    stores.client.dosync([&] {
      for (auto& ref : ref_set_refs[k]) ref.ref_set(2);
    });
  };

  Tally tally;
  for (int round = 0; round < rounds; ++round) {
    for (int k : ks) {
      for (const std::string store : {"zookeeper", "redis", "postgres"}) {
        tally.add(floor_name(k, store), time_each(per_round, [&] { raw.once(k, store); }));
      }
    }
    for (auto& row : usual_rows) {
      tally.add(row_name(row.k, "avout, " + row.where),
                measure_client(usual, per_round, [&] { commit_by(usual, row); }));
    }
    for (auto& row : avout) {
      tally.add(row_name(row.k, "avout, " + row.where),
                measure_client(stores.client, per_round, [&] { commit(row); }));
    }
    for (const std::size_t k : {std::size_t{1}, std::size_t{8}}) {
      tally.add(ref_set_name(k, "avout"),
                measure_client(stores.client, per_round, [&] { ref_set(k); }));
      // The recipe's ref-set takes 18 sequential requests at k=1, about 100 at k=8: fewer runs.
      const int recipe_runs = std::max(2, per_round / (k == 1 ? 2 : 4));
      tally.add(ref_set_name(k, "Avout 2011 recipe"),
                measure_client(stores.client, recipe_runs, [&] { recipes[k]->ref_set(k); }));
    }
    for (const auto& shape : {read_only, read_many}) {
      tally.add(shape_floor_name(shape), time_each(per_round, [&] { raw.once(shape); }));
      tally.add(shape_name(shape, "avout, zookeeper"),
                measure_client(stores.client, per_round, [&] { (void)run_shape(shape); }));
    }
    if (etcd != nullptr) {
      // The first round warms etcd as the servers were warmed; later ones only connect.
      const auto warm = round == 0 ? settings.warm_up() : std::chrono::milliseconds(100);
      for (auto& peer :
           etcd->run("-readwrite-only -latencies -iterations " + std::to_string(per_round) +
                     " -warmup " + std::to_string(warm.count()) + "ms")) {
        const auto& name = peer.result.workload;  // "read-write txn, k=K: etcd STM ...", ...
        tally.add("rounds: " + name, peer.latencies_ms);
      }
    }
  }

  print_table("rounds: read-write txn over k refs and ref-set, " + std::to_string(rounds) +
                  " alternating rounds of " + std::to_string(per_round) +
                  " per row (the recipe fewer)",
              summary_rows(tally, avout, usual_rows));
  print_round_comparison(tally, wheres, rounds, etcd != nullptr);
}

}  // namespace avout::bench
