// The contended bank in alternating rounds. etcd's peer runs its 8 clients as goroutines of one
// process, so avout runs in that shape too (8 clients on 8 threads), and with the 8 threads
// sharing one client. Each round measures every row once, one after another; the machine's
// drift between rounds then moves the rows of one round together.
#include "external_peers.hpp"
#include "sleep_tally.hpp"
#include "workloads.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <thread>

namespace avout::bench {

namespace {

constexpr int clients_in_bank = 8;

// Each row's transfers per second, round by round.
using Rounds = std::map<std::string, std::vector<double>>;

void print_ratios(const Rounds& rounds, const std::string& mine, const std::string& theirs) {
  const auto a = rounds.find(mine), b = rounds.find(theirs);
  if (a == rounds.end() || b == rounds.end()) return;
  std::vector<double> each;
  int higher = 0;
  for (std::size_t r = 0; r < a->second.size() && r < b->second.size(); ++r) {
    each.push_back(a->second[r] / b->second[r]);
    if (a->second[r] > b->second[r]) ++higher;
  }
  if (each.empty()) return;
  std::printf("  %-44s / %-30s %5.2f [%4.2f, %4.2f]  higher in %d of %zu\n", mine.c_str(),
              theirs.c_str(), median(each), *std::min_element(each.begin(), each.end()),
              *std::max_element(each.begin(), each.end()), higher, each.size());
}

}  // namespace

Result threaded_bank(const std::string& workload, const std::vector<Stores*>& clients,
                     std::vector<std::vector<Ref<long>>>& accounts, int threads, int per_thread,
                     const std::function<std::pair<int, int>(std::mt19937&)>& pick) {
  struct Totals {
    std::uint64_t requests = 0, round_trips = 0, retries = 0;
  };
  auto totals = [&] {
    Totals sum;
    for (Stores* each : clients) {
      const auto now = each->client.session().statistics();
      sum.requests += now.requests;
      sum.round_trips += now.round_trips;
      sum.retries += each->client.transaction_counts().second;
    }
    return sum;
  };
  std::vector<std::vector<double>> latencies(static_cast<std::size_t>(threads));
  std::vector<std::thread> running;
  const auto before = totals();
  const auto slept_before = slept_ns();
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&, t] {
      const std::size_t c = static_cast<std::size_t>(t) % clients.size();
      std::mt19937 own(static_cast<unsigned>(t) + 200);
      latencies[static_cast<std::size_t>(t)] = time_each(per_thread, [&] {
        auto [from, to] = pick(own);
        transfer(clients[c]->client, accounts[c][static_cast<std::size_t>(from)],
                 accounts[c][static_cast<std::size_t>(to)]);
      });
    });
  }
  for (auto& thread : running) thread.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto after = totals();
  std::vector<double> all;
  for (const auto& each : latencies) all.insert(all.end(), each.begin(), each.end());
  Result row = summarize(workload, all);
  const auto transfers = static_cast<double>(all.size());
  row.operations_per_second = transfers / seconds;
  row.zookeeper_requests = static_cast<double>(after.requests - before.requests) / transfers;
  row.zookeeper_round_trips =
      static_cast<double>(after.round_trips - before.round_trips) / transfers;
  row.retries = static_cast<double>(after.retries - before.retries) / transfers;
  row.slept_ms = static_cast<double>(slept_ns() - slept_before) / 1e6 / transfers;
  return row;
}

void run_bank_rounds(const Settings& settings, const Servers& servers, const EtcdPeer* etcd) {
  const int rounds = settings.quick ? 2 : 5;
  const int per_thread = settings.iterations(200);
  const std::string bank = unique_name("rounds-bank");
  std::vector<std::unique_ptr<Stores>> owned;
  std::vector<Stores*> clients;
  std::vector<std::vector<Ref<long>>> accounts;
  for (int c = 0; c < clients_in_bank; ++c) {
    owned.push_back(std::make_unique<Stores>(servers));
    clients.push_back(owned.back().get());
    std::vector<Ref<long>> refs;
    for (int i = 0; i < bank_accounts; ++i) {
      refs.push_back(owned.back()->client.ref<long>(bank + "/" + std::to_string(i), 1000,
                                                    owned.back()->store("redis")));
    }
    accounts.push_back(std::move(refs));
  }
  const std::string own_clients = "avout, 8 clients in 1 process";
  const std::string one_client = "avout, 1 client, 8 threads";
  Rounds measured;
  for (int round = 0; round < rounds; ++round) {
    measured[own_clients].push_back(
        threaded_bank(own_clients, clients, accounts, clients_in_bank, per_thread, pick_accounts)
            .operations_per_second);
    measured[one_client].push_back(threaded_bank(one_client, {clients.front()}, accounts,
                                                 clients_in_bank, per_thread, pick_accounts)
                                       .operations_per_second);
    if (etcd != nullptr) {
      // The first round warms etcd as the servers were warmed; later ones only connect.
      const auto warm = round == 0 ? settings.warm_up() : std::chrono::milliseconds(100);
      for (auto& peer : etcd->run("-bank-only -iterations " + std::to_string(2 * per_thread) +
                                  " -warmup " + std::to_string(warm.count()) + "ms")) {
        const auto& name =
            peer.result.workload;  // "bank transfer, 8 clients in 1 process: etcd STM ..."
        const auto colon = name.find(": ");
        if (colon == std::string::npos)
          throw std::runtime_error("bank rounds: unexpected etcd row " + name);
        measured[name.substr(colon + 2)].push_back(peer.result.operations_per_second);
      }
    }
  }
  std::printf(
      "\n== bank rounds: 8 clients, 20 Redis accounts, %d alternating rounds of %d transfers per "
      "client; transfers/s, median [min, max] ==\n",
      rounds, per_thread);
  for (const auto& [name, each] : measured) {
    std::printf("  %-44s %7.0f [%.0f, %.0f]\n", name.c_str(), median(each),
                *std::min_element(each.begin(), each.end()),
                *std::max_element(each.begin(), each.end()));
  }
  std::printf("per round, one row's transfers/s over another's:\n");
  for (const auto& mine : {own_clients, one_client}) {
    for (const std::string isolation : {"serializable", "default"}) {
      print_ratios(measured, mine, "etcd STM " + isolation);
    }
  }
}

}  // namespace avout::bench
