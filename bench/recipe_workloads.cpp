// bench/recipes: avout's Semaphore, WorkQueue and LeaderElection beside Curator's
// InterProcessSemaphoreV2, DistributedQueue and LeaderLatch on the same ZooKeeper, and etcd's
// Election on the bench's etcd, in the same run: acquire+release, put+take, campaign+resign,
// and the leader hand-over after its process is killed (SIGKILL), every session of one timeout
// (etcd's lease TTL the same), the hand-over printed beyond that timeout.
#include "external_peers.hpp"
#include "workloads.hpp"

#include "support/processes.hpp"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <thread>

namespace avout::bench {

namespace {

using namespace std::chrono_literals;

// The session timeout of every hand-over's sessions: avout's, Curator's and etcd's lease TTL
// (whole seconds there).
constexpr std::chrono::milliseconds session_timeout = 2000ms;
constexpr int processes = 10;       // the contended semaphore's, as the lock rows' Gaggle benchmark
constexpr std::size_t permits = 3;  // the semaphores', avout's and Curator's

ClientOptions recipe_options(const Servers& servers) {
  return {.hosts = servers.zookeeper, .session_timeout = session_timeout};
}

// One hand-over: a leader in a child process, a follower here; ms from the leader's SIGKILL
// to the follower's campaign() returning.
double avout_hand_over(const Servers& servers, const std::string& name) {
  const auto file = std::filesystem::temp_directory_path() /
                    ("avout-bench-handover-" + std::to_string(std::random_device{}()));
  // Forked before this process opens a client (tests/support/processes.hpp).
  testing::ChildProcess leader(0, [&](int) {
    Client client(recipe_options(servers));
    auto election = client.leader_election(name, "leader");
    election.campaign(Deadline::after(30s));
    std::ofstream(file) << "leading\n";
    std::this_thread::sleep_for(10min);  // killed here
  });
  if (!testing::wait_for_file(file, 30s))
    throw std::runtime_error("recipes: the hand-over's leader did not lead");
  std::filesystem::remove(file);
  Client client(recipe_options(servers));
  if (client.session().negotiated_timeout() != session_timeout) {
    std::printf("(recipes: ZooKeeper granted a session timeout of %lld ms)\n",
                static_cast<long long>(client.session().negotiated_timeout().count()));
  }
  auto follower = client.leader_election(name, "follower");
  std::atomic<bool> led{false};
  std::chrono::steady_clock::time_point led_at;
  std::exception_ptr failed;
  std::thread campaign([&] {
    try {
      follower.campaign(Deadline::after(60s));
      led_at = std::chrono::steady_clock::now();
    } catch (...) {
      failed = std::current_exception();
    }
    led = true;
  });
  std::this_thread::sleep_for(500ms);  // the follower queued behind the leader
  const bool early = led;
  const auto killed = std::chrono::steady_clock::now();
  leader.signal(SIGKILL);
  campaign.join();
  (void)leader.wait(10s);
  if (failed) std::rethrow_exception(failed);
  if (early) throw std::runtime_error("recipes: the follower led before the kill");
  follower.resign();
  return std::chrono::duration<double, std::milli>(led_at - killed).count();
}

// The hand-over row of `who`, from each hand-over's ms: p50, the longest as p99; compared
// with the session timeout.
Result hand_over_row(const std::string& who, std::vector<double> hand_overs_ms) {
  std::sort(hand_overs_ms.begin(), hand_overs_ms.end());
  Result row;
  row.workload = "leader hand-over after kill -9: " + who;
  row.p50_ms = hand_overs_ms[(hand_overs_ms.size() - 1) / 2];
  row.p99_ms = hand_overs_ms.back();
  row.floor_ms = static_cast<double>(session_timeout.count());
  row.floor_name = "session timeout";
  return row;
}

// Prints each hand-over row's p50 and range minus the session timeout.
void print_beyond_timeout(const std::vector<std::pair<Result, std::vector<double>>>& rows) {
  std::printf("hand-over beyond the session timeout (%lld ms): p50 [min, max] of %zu\n",
              static_cast<long long>(session_timeout.count()),
              rows.empty() ? std::size_t{0} : rows.front().second.size());
  const auto timeout = static_cast<double>(session_timeout.count());
  for (const auto& [row, each] : rows) {
    const auto [least, most] = std::minmax_element(each.begin(), each.end());
    std::printf("  %-62s %+9.1f ms [%+.1f, %+.1f]\n", row.workload.c_str(), row.p50_ms - timeout,
                *least - timeout, *most - timeout);
  }
  std::fflush(stdout);
}

Result with_floor(Result row, double floor_ms, const std::string& floor_name) {
  row.floor_ms = floor_ms;
  row.floor_name = floor_name;
  return row;
}

}  // namespace

void run_recipe_workloads(const Settings& settings, const Servers& servers, const Floors& floors,
                          const EtcdPeer* etcd) {
  std::vector<Result> rows;
  const std::string run = unique_name("recipes");
  const int n = settings.iterations(500);
  const auto zookeeper = [&](Result row) {
    return with_floor(std::move(row), floors.zookeeper_get_set, "zookeeper get+set");
  };
  {
    Client client(recipe_options(servers));
    auto semaphore = client.semaphore(run + "/semaphore-alone", permits);
    rows.push_back(zookeeper(summarize("semaphore acquire+release, 1 process: avout Semaphore",
                                       measure_client(client, n, [&] {
                                         auto permit = semaphore.acquire();
                                         permit.release();
                                       }))));
    auto queue = client.work_queue<long>(run + "/queue");
    long next = 0;
    rows.push_back(zookeeper(
        summarize("queue put+take, 1 process: avout WorkQueue", measure_client(client, n, [&] {
                    queue.put(next++);
                    (void)queue.take();
                  }))));
    auto election = client.leader_election(run + "/election-alone", "alone");
    rows.push_back(zookeeper(summarize("leader campaign+resign, 1 process: avout LeaderElection",
                                       measure_client(client, n, [&] {
                                         election.campaign();
                                         election.resign();
                                       }))));
  }
  rows.push_back(zookeeper(
      run_processes("semaphore, 10 processes, 3 permits: avout Semaphore", processes, [&](int) {
        Client client(recipe_options(servers));
        auto semaphore = client.semaphore(run + "/semaphore", permits);
        return measure_client(client, settings.iterations(100), [&] {
          auto permit = semaphore.acquire();
          short_task();
        });
      })));
  // 4 producers put and 4 workers take, each its share: the ops are the puts and the takes.
  rows.push_back(
      zookeeper(run_processes("queue, 4 producers + 4 workers: avout WorkQueue", 8, [&](int index) {
        Client client(recipe_options(servers));
        auto queue = client.work_queue<long>(run + "/shared-queue");
        return measure_client(client, settings.iterations(100), [&] {
          if (index < 4) {
            queue.put(index);
          } else {
            (void)queue.take();
          }
        });
      })));
  const int hand_overs = settings.quick ? 3 : 7;
  std::vector<std::pair<Result, std::vector<double>>> hand_over_rows;
  {
    std::vector<double> each;
    for (int round = 0; round < hand_overs; ++round)
      each.push_back(avout_hand_over(servers, run + "/handover-" + std::to_string(round)));
    hand_over_rows.emplace_back(hand_over_row("avout LeaderElection", each), each);
  }
  for (const auto& peer : run_curator_recipes(settings, servers, session_timeout, hand_overs)) {
    if (peer.result.workload.rfind("leader hand-over", 0) == 0) {
      hand_over_rows.emplace_back(hand_over_row("Curator LeaderLatch", peer.latencies_ms),
                                  peer.latencies_ms);
    } else {
      rows.push_back(zookeeper(peer.result));
    }
  }
  if (etcd != nullptr) {
    const auto peer_rows = etcd->run(
        "-recipes -iterations " + std::to_string(n) + " -warmup " +
        std::to_string(settings.warm_up().count()) + "ms -ttl " +
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(session_timeout).count()) +
        " -handovers " + std::to_string(hand_overs));
    double floor = 0;
    for (const auto& peer : peer_rows) {
      if (peer.result.workload == "etcd get + put") floor = peer.result.p50_ms;
    }
    for (const auto& peer : peer_rows) {
      if (peer.result.workload.rfind("leader hand-over", 0) == 0) {
        hand_over_rows.emplace_back(hand_over_row("etcd Election", peer.latencies_ms),
                                    peer.latencies_ms);
      } else if (peer.result.workload.rfind("etcd ", 0) != 0) {
        rows.push_back(with_floor(peer.result, floor, "etcd get+put"));
      }
    }
  }
  // Grouped by workload (avout's row first), as the rows' names begin.
  std::stable_sort(rows.begin(), rows.end(), [](const Result& a, const Result& b) {
    return a.workload.substr(0, a.workload.find(':')) < b.workload.substr(0, b.workload.find(':'));
  });
  print_table("recipes: avout beside Curator (same ZooKeeper) and etcd's Election", rows);
  std::vector<Result> hand_over_results;
  for (const auto& entry : hand_over_rows) hand_over_results.push_back(entry.first);
  print_table("recipes: leader hand-over after the leader's process is killed (kill -9)",
              hand_over_results);
  print_beyond_timeout(hand_over_rows);
}

}  // namespace avout::bench
