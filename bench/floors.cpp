#include "floors.hpp"
#include "raw_redis.hpp"
#include "workloads.hpp"

#include <avout/zookeeper_session.hpp>

#include <pqxx/pqxx>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

namespace avout::bench {

namespace {
// Gets on `session` while 4 sessions of their own set other nodes without pause. A standalone
// ZooKeeper passes a read on only once the writes queued before it are flushed to its log,
// so a read waits for an fsync whenever anybody writes: what every round trip of a contended
// workload pays.
std::vector<double> gets_beside_writers(ZooKeeperSession& session, const std::string& zookeeper,
                                        int n) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      ZooKeeperSession own(SessionOptions{.hosts = zookeeper});
      const std::string path = "/bench-floor/writer-" + std::to_string(w);
      own.create_recursive(path);
      while (!stop) own.set(path, Bytes(8, 1));
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the writers are under way
  auto latencies = time_each(n, [&] { session.get("/bench-floor/a"); });
  stop = true;
  for (auto& writer : writers) writer.join();
  return latencies;
}

// One raw multi shaped like a commit over k refs whose values ZooKeeper holds, without avout:
// a marker created; per ref its head set, its barging tag checked and its new value's node
// created; the clock set; the previous multi's value nodes and marker removed (4k + 3
// operations), every versioned op at its version. What the server alone charges a commit.
std::vector<double> commit_shaped_multis(ZooKeeperSession& session, int k, int n) {
  const std::string root = unique_name("floor-commit-" + std::to_string(k));
  for (int i = 0; i < k; ++i) {
    session.create_recursive(root + "/head-" + std::to_string(i));
    session.create_recursive(root + "/tag-" + std::to_string(i));
  }
  session.create_recursive(root + "/clock");
  session.create_recursive(root + "/values");
  const Bytes head(48, 1);
  const Bytes value(8, 2);
  int round = 0;
  auto node = [&](const char* kind, int r, int i) {
    return root + "/values/" + kind + "-" + std::to_string(r) + "-" + std::to_string(i);
  };
  auto shaped = [&](bool first) {
    std::vector<Operation> ops{op::Create{node("marker", round, 0), {}, CreateMode::persistent}};
    for (int i = 0; i < k; ++i) {
      ops.push_back(op::SetData{root + "/head-" + std::to_string(i), head, round});
      ops.push_back(op::Check{root + "/tag-" + std::to_string(i), 0});
      ops.push_back(op::Create{node("value", round, i), value, CreateMode::persistent});
    }
    ops.push_back(op::SetData{root + "/clock", {}, round});
    if (!first) {
      for (int i = 0; i < k; ++i) ops.push_back(op::Remove{node("value", round - 1, i), 0});
      ops.push_back(op::Remove{node("marker", round - 1, 0), 0});
    }
    session.multi(ops);
    ++round;
  };
  shaped(true);
  auto latencies = time_each(n, [&] { shaped(false); });
  return latencies;
}
}  // namespace

Floors measure_floors(const Settings& settings, const std::string& zookeeper,
                      const std::string& redis_url, const std::string& postgres_url) {
  Floors floors;
  std::vector<Result> rows;
  const int n = settings.iterations(2000);
  {
    ZooKeeperSession session(SessionOptions{.hosts = zookeeper});
    session.create_recursive("/bench-floor/a");
    for (const char* child : {"/bench-floor/b", "/bench-floor/c", "/bench-floor/d"}) {
      session.create_recursive(child);
    }
    const Bytes data(8, 1);
    rows.push_back(
        summarize("zookeeper get", time_each(n, [&] { session.get("/bench-floor/a"); })));
    floors.zookeeper_get = rows.back().p50_ms;
    rows.push_back(
        summarize("zookeeper set", time_each(n, [&] { session.set("/bench-floor/a", data); })));
    floors.zookeeper_set = rows.back().p50_ms;
    rows.push_back(summarize("zookeeper multi (4 sets)", time_each(n, [&] {
                               session.multi({op::SetData{"/bench-floor/a", data, -1},
                                              op::SetData{"/bench-floor/b", data, -1},
                                              op::SetData{"/bench-floor/c", data, -1},
                                              op::SetData{"/bench-floor/d", data, -1}});
                             })));
    floors.zookeeper_multi = rows.back().p50_ms;
    for (int k : {1, 8}) {
      rows.push_back(summarize("zookeeper multi shaped like a commit, k=" + std::to_string(k),
                               commit_shaped_multis(session, k, n)));
    }
    rows.push_back(summarize("zookeeper get + versioned set", time_each(n, [&] {
                               auto node = session.get("/bench-floor/a");
                               session.set("/bench-floor/a", data, node.stat.version);
                             })));
    floors.zookeeper_get_set = rows.back().p50_ms;
    rows.push_back(summarize("zookeeper get, 4 other sessions writing",
                             gets_beside_writers(session, zookeeper, n / 4)));
  }
  {
    RawRedis redis(redis_url);
    rows.push_back(summarize("redis GET + SET", time_each(n, [&] {
                               redis.command({"GET", "bench-floor"});
                               redis.command({"SET", "bench-floor", "12345678"});
                             })));
    floors.redis_get_set = rows.back().p50_ms;
  }
  {
    pqxx::connection connection(postgres_url);
    {
      pqxx::work setup(connection);
      setup.exec("CREATE TABLE IF NOT EXISTS bench_floor (id int primary key, value bigint)");
      setup.exec("INSERT INTO bench_floor VALUES (1, 0) ON CONFLICT DO NOTHING");
      setup.commit();
    }
    rows.push_back(summarize("postgres SELECT + UPDATE (autocommit)", time_each(n, [&] {
                               pqxx::nontransaction statement(connection);
                               statement.exec("SELECT value FROM bench_floor WHERE id = 1");
                               statement.exec(
                                   "UPDATE bench_floor SET value = value + 1 WHERE id = 1");
                             })));
    floors.postgres_get_set = rows.back().p50_ms;
  }
  print_table("floors: raw round trips, this run", rows);
  return floors;
}

}  // namespace avout::bench
