#include "bank.hpp"

#include "store_urls.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <random>
#include <thread>
#include <vector>

namespace avout::tool {

namespace {

constexpr long initial_balance = 1000;

struct Accounts {
  Client client;
  std::vector<StoreHandle> stores;
  std::vector<Ref<long>> refs;

  explicit Accounts(const BankSettings& settings) : client(settings.client) {
    stores = deployment_stores(client, settings.stores);
    for (int i = 0; i < settings.accounts; ++i) {
      refs.push_back(client.ref<long>("/bank/account-" + std::to_string(i), initial_balance,
                                      *stores[static_cast<std::size_t>(i) % stores.size()]));
    }
  }
  long total() {
    return client.dosync([&] {
      long sum = 0;
      for (auto& ref : refs) sum += ref.deref();
      return sum;
    });
  }
};

}  // namespace

int run_bank(const BankSettings& settings) {
  if (settings.processes < 1 || settings.accounts < 2 || settings.duration.count() < 1) {
    std::fprintf(stderr, "avout bank: need at least 1 process, 2 accounts and 1 ms\n");
    return 2;
  }
  const long expected = [&] {
    Accounts setup(settings);  // creates the accounts; closed before any fork
    return setup.total();
  }();
  std::vector<pid_t> children;
  const pid_t parent = getpid();
  for (int index = 0; index < settings.processes; ++index) {
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      // The transfers end with the tool, also when --command-timeout ends it early.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      int code = 0;
      try {
        Accounts bank(settings);
        std::mt19937 random(static_cast<unsigned>(getpid()));
        const auto stop = std::chrono::steady_clock::now() + settings.duration;
        const auto count = static_cast<unsigned>(settings.accounts);
        while (std::chrono::steady_clock::now() < stop) {
          const auto from = random() % count, to = (from + 1 + random() % (count - 1)) % count;
          const long amount = static_cast<long>(random() % 100);
          bank.client.dosync([&] {
            bank.refs[from].alter([](long v, long d) { return v - d; }, amount);
            bank.refs[to].alter([](long v, long d) { return v + d; }, amount);
          });
        }
        std::printf("process %d: %llu transfers, %llu retries\n", index,
                    static_cast<unsigned long long>(bank.client.transaction_counts().first),
                    static_cast<unsigned long long>(bank.client.transaction_counts().second));
      } catch (const std::exception& error) {
        std::fprintf(stderr, "process %d: %s\n", index, error.what());
        code = 1;
      }
      std::fflush(nullptr);
      _exit(code);
    }
    children.push_back(pid);
  }
  int result = 0;
  {
    Accounts watcher(settings);
    // A total once a second while the transfers run, and one after their end.
    const auto start = std::chrono::steady_clock::now();
    for (int second = 0;; ++second) {
      const long total = watcher.total();
      std::printf("t=%2ds total %ld%s\n", second, total, total == expected ? "" : "  WRONG");
      std::fflush(stdout);
      if (total != expected) result = 1;
      if (std::chrono::seconds(second) >= settings.duration) break;
      std::this_thread::sleep_until(
          std::min(start + std::chrono::seconds(second + 1), start + settings.duration));
    }
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) result = 1;
  }
  return result;
}

}  // namespace avout::tool
