#pragma once
// The opacity workload (validated attempts, issue 40 item 3), shared by opacity_test and
// opacity_fault_test: a bank of refs with a fixed total spread over ZooKeeper, Redis and
// PostgreSQL; threads of client processes run transfers whose body first reads every account
// (one deref after another, or all in one deref_all, alternately) and records, before any
// write, whether the sum it saw is the total. Aborted attempts count too: every attempt of
// any mode must see one consistent state.

#include <avout/avout.hpp>

#include "dosync_in.hpp"
#include "processes.hpp"
#include "servers.hpp"
#include "three_stores.hpp"
#include "zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <thread>
#include <tuple>
#include <utility>

namespace avout::testing {

/// How one opacity run is shaped.
struct OpacityRun {
  int processes = 3;                            ///< client processes
  int threads = 3;                              ///< threads per process, sharing its client
  std::chrono::milliseconds length{4000};       ///< how long the threads transfer
  std::optional<avout::Isolation> isolation{};  ///< empty: the client's default
  std::optional<ZooKeeperFaultRates> faults{};  ///< a FaultPlan in each process, if any
};

/// What the attempts of a run saw, summed over its processes.
struct OpacitySeen {
  long attempts = 0;      ///< bodies that read every account (aborted attempts included)
  long inconsistent = 0;  ///< of those, the ones whose sum was not the total
  long committed = 0;     ///< transfers that returned
  long errors = 0;        ///< dosyncs that threw
  long final_total = 0;   ///< the total read after the run
};

/// The starting balance of every account.
inline constexpr long opacity_initial = 1000;

/// The sum of `accounts` (N of them) read in one deref_all.
template <std::size_t N, std::size_t... I>
long sum_together(const std::vector<avout::Ref<long>>& accounts, std::index_sequence<I...>) {
  const auto values = avout::deref_all(accounts[I]...);
  return std::apply([](auto... value) { return (value + ... + 0L); }, values);
}

/// One process of the run: transfers until `run.length` passed; writes its counts to `out`.
template <std::size_t N>
void opacity_process(int index, const OpacityRun& run, const std::string& prefix,
                     const std::filesystem::path& out) {
  ThreeStores stores;
  auto accounts = stores.accounts(prefix, static_cast<int>(N), opacity_initial);
  constexpr long total = opacity_initial * static_cast<long>(N);
  std::optional<FaultPlan> plan;
  if (run.faults)
    plan.emplace(1000 + static_cast<std::uint64_t>(index), *run.faults,
                 shared_zookeeper().connect_string());
  std::atomic<long> attempts{0}, inconsistent{0}, committed{0}, errors{0};
  const auto end = std::chrono::steady_clock::now() + run.length;
  std::vector<std::thread> threads;
  for (int thread = 0; thread < run.threads; ++thread) {
    threads.emplace_back([&, thread] {
      std::mt19937_64 random(static_cast<std::uint64_t>(index * 131 + thread));
      long attempt = 0;
      while (std::chrono::steady_clock::now() < end) {
        const auto from = static_cast<std::size_t>(random() % N);
        const auto to = (from + 1 + static_cast<std::size_t>(random() % (N - 1))) % N;
        const long amount = 1 + static_cast<long>(random() % 50);
        try {
          dosync_in(stores.client, run.isolation, [&] {
            long sum = 0;
            if (++attempt % 2 == 0) {
              sum = sum_together<N>(accounts, std::make_index_sequence<N>{});
            } else {
              for (auto& account : accounts) {
                sum += account.deref();
                std::this_thread::yield();  // room for other commits between the reads
              }
            }
            ++attempts;
            if (sum != total) ++inconsistent;
            accounts[from].alter([](long v, long d) { return v - d; }, amount);
            accounts[to].alter([](long v, long d) { return v + d; }, amount);
          });
          ++committed;
        } catch (const std::exception& error) {
          std::fprintf(stderr, "process %d thread %d: %s\n", index, thread, error.what());
          ++errors;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  if (run.faults) {
    FaultPlan::enable(false);
    std::printf("  process %d: %s\n", index, describe(FaultPlan::counts()).c_str());
    std::fflush(stdout);
  }
  std::ofstream(out) << attempts << ' ' << inconsistent << ' ' << committed << ' ' << errors
                     << '\n';
}

/// Runs the workload over N accounts and returns what its attempts saw.
template <std::size_t N>
OpacitySeen run_opacity_bank(const OpacityRun& run) {
  static_assert(N >= 2);
  start_shared_servers();
  const std::string prefix = unique_name("/opacity-test", "bank");
  const auto folder =
      std::filesystem::temp_directory_path() / ("avout-opacity" + prefix.substr(prefix.rfind('-')));
  std::filesystem::create_directories(folder);
  {
    ThreeStores setup;  // create the accounts once, before the processes race to
    (void)setup.accounts(prefix, static_cast<int>(N), opacity_initial);
  }
  const auto codes = run_in_processes(
      run.processes,
      [&](int index) { opacity_process<N>(index, run, prefix, folder / std::to_string(index)); },
      scaled(run.length + std::chrono::seconds(60)));
  REQUIRE(codes == std::vector<int>(static_cast<std::size_t>(run.processes), 0));
  OpacitySeen seen;
  for (int index = 0; index < run.processes; ++index) {
    std::ifstream in(folder / std::to_string(index));
    long attempts = 0, inconsistent = 0, committed = 0, errors = 0;
    REQUIRE(static_cast<bool>(in >> attempts >> inconsistent >> committed >> errors));
    seen.attempts += attempts;
    seen.inconsistent += inconsistent;
    seen.committed += committed;
    seen.errors += errors;
  }
  std::filesystem::remove_all(folder);
  ThreeStores check;
  auto accounts = check.accounts(prefix, static_cast<int>(N), opacity_initial);
  seen.final_total =
      check.client.dosync([&] { return sum_together<N>(accounts, std::make_index_sequence<N>{}); });
  MESSAGE(N << " accounts, " << run.processes << " processes of " << run.threads
            << " threads: " << seen.attempts << " attempts, " << seen.inconsistent
            << " inconsistent, " << seen.committed << " transfers, " << seen.errors << " errors");
  return seen;
}

}  // namespace avout::testing
