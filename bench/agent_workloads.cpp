#include "workloads.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

namespace avout::bench {

namespace {

// Sends `count` increments to `name` from this process, spread over `threads` sending at
// once, then awaits them. A closure runs in this process: latency of each is the time from
// send() until it starts running. A named action ("increment", defined by every process) may
// run in any process: latency of each is its send() call only. With `per_transaction` > 0 the
// named sends go `per_transaction` at a time inside one dosync (their creates ride in its
// commit multi): latency is then that dosync's, once per group.
ProcessReport send_and_await(Stores& stores, const std::string& name, const std::string& where,
                             int count, int threads = 1, bool named = false,
                             int per_transaction = 0) {
  auto agent = stores.client.agent<long>(name, 0, stores.store(where));
  agent.define("increment", [](long value, long) { return value + 1; });
  std::mutex mutex;
  std::unordered_map<long, std::chrono::steady_clock::time_point> sent;
  std::vector<double> latencies;
  wait_for_all_processes();
  const auto before = stores.client.session().statistics();
  const auto start = std::chrono::steady_clock::now();
  const double started_ms = steady_ms();
  auto send_one = [&](long i) {
    if (named) {
      const auto start = std::chrono::steady_clock::now();
      agent.send("increment", i);
      const auto took = std::chrono::steady_clock::now() - start;
      std::lock_guard lock(mutex);
      latencies.push_back(std::chrono::duration<double, std::milli>(took).count());
      return;
    }
    {
      std::lock_guard lock(mutex);
      sent[i] = std::chrono::steady_clock::now();
    }
    agent.send(
        [&mutex, &sent, &latencies](long value, long id) {
          const auto now = std::chrono::steady_clock::now();
          std::lock_guard lock(mutex);
          if (auto found = sent.find(id); found != sent.end()) {
            latencies.push_back(
                std::chrono::duration<double, std::milli>(now - found->second).count());
            sent.erase(found);  // a retried apply counts once
          }
          return value + 1;
        },
        i);
  };
  auto send_group = [&](long first, long end) {
    const auto start = std::chrono::steady_clock::now();
    stores.client.dosync([&] {
      for (long i = first; i < end; ++i) agent.send("increment", i);
    });
    const auto took = std::chrono::steady_clock::now() - start;
    std::lock_guard lock(mutex);
    latencies.push_back(std::chrono::duration<double, std::milli>(took).count());
  };
  std::vector<std::thread> senders;
  for (int t = 0; t < threads; ++t) {
    senders.emplace_back([&, t] {
      if (per_transaction > 0) {
        for (long i = t * per_transaction; i < count;
             i += static_cast<long>(threads) * per_transaction) {
          send_group(i, std::min<long>(i + per_transaction, count));
        }
        return;
      }
      for (long i = t; i < count; i += threads) send_one(i);
    });
  }
  for (auto& sender : senders) sender.join();
  agent.await(std::chrono::minutes(5));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto after = stores.client.session().statistics();
  ProcessReport report;
  report.started_ms = started_ms;
  report.finished_ms = steady_ms();
  std::lock_guard lock(mutex);
  report.latencies_ms = latencies;
  report.zookeeper_requests = static_cast<double>(after.requests - before.requests);
  report.zookeeper_round_trips = static_cast<double>(after.round_trips - before.round_trips);
  (void)seconds;
  return report;
}

}  // namespace

void run_agent_workloads(const Settings& settings, const Servers& servers, const Floors& floors) {
  std::vector<Result> rows;
  const int n = settings.iterations(1000);
  // The agent's value in ZooKeeper and in Redis: the other stores add nothing new here.
  for (const std::string where : {"zookeeper", "redis"}) {
    const std::string name = unique_name("agent-" + where);
    {
      Stores stores(servers);
      const auto start = std::chrono::steady_clock::now();
      auto report = send_and_await(stores, name, where, n);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      Result row = summarize("send to run, 1 process, " + where, report);
      row.operations_per_second = n / seconds;
      row.floor_ms = floors.zookeeper_multi;
      row.floor_name = "zookeeper multi";
      rows.push_back(row);
    }
    Result shared = run_processes("send to run, 4 processes, " + where, 4, [&](int) {
      Stores stores(servers);
      return send_and_await(stores, name, where, n / 4);
    });
    shared.floor_ms = floors.zookeeper_multi;
    shared.floor_name = "zookeeper multi";
    rows.push_back(shared);
    Result burst = run_processes("send to run, 4 processes x 4 threads, " + where, 4, [&](int) {
      Stores stores(servers);
      return send_and_await(stores, name, where, n / 4, 4);
    });
    burst.floor_ms = floors.zookeeper_multi;
    burst.floor_name = "zookeeper multi";
    rows.push_back(burst);
    // Named actions: whichever process drives the queue runs every process's sends in it.
    for (const int threads : {1, 4}) {
      Result row = run_processes("send to run, 4 processes" +
                                     std::string(threads > 1 ? " x 4 threads" : "") +
                                     ", named action (p50: send call), " + where,
                                 4, [&](int) {
                                   Stores stores(servers);
                                   return send_and_await(stores, name, where, n / 4, threads, true);
                                 });
      row.floor_ms = floors.zookeeper_multi;
      row.floor_name = "zookeeper multi";
      rows.push_back(row);
    }
    // A producer that groups its sends: 16 named sends per dosync, their creates in its one
    // commit multi. Each process sends n of them (4 times the other rows: a window long enough
    // to hold a few hundred commits). Samples are dosyncs; the row counts sends.
    constexpr int per_group = 16;
    Result grouped = run_processes(
        "send to run, 4 processes, named action, 16 per dosync (p50: dosync), " + where, 4,
        [&](int) {
          Stores stores(servers);
          return send_and_await(stores, name, where, n, 1, true, per_group);
        });
    const double sends_per_group = static_cast<double>(n) / ((n + per_group - 1) / per_group);
    grouped.operations_per_second *= sends_per_group;
    grouped.zookeeper_requests /= sends_per_group;
    grouped.zookeeper_round_trips /= sends_per_group;
    grouped.floor_ms = floors.zookeeper_multi;
    grouped.floor_name = "zookeeper multi";
    rows.push_back(grouped);
  }
  print_table("agent: send(+1), latency from send to run, throughput of sends run", rows);
}

}  // namespace avout::bench
