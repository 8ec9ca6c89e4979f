// WorkQueue under injected ZooKeeper faults (lost replies, early failures, delays, session
// expiry): producers' puts, half in dosync, and workers' takes, each in a dosync writing the
// item's counter ref; the checker: every item consumed by exactly one committed take.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/wq-fault-test", stem);
}

std::string counter(const std::string& name, int item) {
  return name + "/count-" + std::to_string(item);
}

}  // namespace

TEST_CASE("under lost replies and expiries every item is taken exactly once") {
  const auto hosts = avout::testing::shared_zookeeper().connect_string();
  const std::string name = unique_name("faults");
  constexpr int producers = 2, per_producer = 40, workers = 3;
  avout::Client client(avout::ClientOptions{.hosts = hosts, .session_timeout = 2000ms});
  auto queue = client.work_queue<int>(name);
  for (int i = 0; i < producers * per_producer; ++i) (void)client.ref<long>(counter(name, i), 0);

  std::atomic<int> produced{0};
  std::atomic<bool> unknown{false};
  // Workers stop once every item was taken, or a while after the last put (a take may give
  // up at its deadline while the session is being renewed: that is no sign of an empty queue).
  std::atomic<int> consumed{0};
  const auto give_up_at = std::chrono::steady_clock::now() + scaled(90s);
  {
    avout::testing::FaultPlan plan(
        38,
        {.reply_lost = 0.1, .fail_early = 0.05, .expire = 0.005, .delay = 0.05, .max_delay = 50ms},
        hosts);
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&, p] {
        for (int k = 0; k < per_producer; ++k) {
          const int item = p * per_producer + k;
          while (true) {
            try {
              if (k % 2 == 0) {
                queue.put(item);
              } else {
                client.dosync([&] { queue.put(item); });
              }
              break;
            } catch (const avout::OutcomeUnknown&) {
              unknown = true;  // a put of unknown outcome cannot be retried blindly
              break;
            } catch (const avout::ConnectionLoss&) {  // nothing queued: put again
            } catch (const avout::SessionExpired&) {
            }
          }
          ++produced;
        }
      });
    }
    for (int w = 0; w < workers; ++w) {
      threads.emplace_back([&] {
        while (true) {
          try {
            const auto item = client.dosync([&] {
              auto got = queue.take(avout::Deadline::after(scaled(1s)));
              if (got) client.ref<long>(counter(name, *got), 0).alter([](long n) { return n + 1; });
              return got;
            });
            if (item) ++consumed;
            if (consumed == producers * per_producer ||
                std::chrono::steady_clock::now() > give_up_at)
              return;
          } catch (const avout::OutcomeUnknown&) {
            unknown = true;
          } catch (const avout::ConnectionLoss&) {
          } catch (const avout::SessionExpired&) {
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    MESSAGE("lost replies " << avout::testing::FaultPlan::counts().reply_lost << ", expiries "
                            << avout::testing::FaultPlan::counts().expired);
  }
  CHECK_FALSE(unknown);
  int once = 0;
  for (int i = 0; i < producers * per_producer; ++i) {
    const long n = client.ref<long>(counter(name, i), 0).deref();
    if (n != 1) MESSAGE("item " << i << " consumed " << n << " times");
    once += n == 1 ? 1 : 0;
  }
  CHECK(once == producers * per_producer);
  CHECK(queue.size() == 0);
}
