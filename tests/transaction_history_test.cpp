// History and barging across processes: a read-only process's history misses grow what the
// writers keep, commutes give way to an older transaction's claim, and a claim whose reply
// was lost still ends with its dosync.
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/stm-history", stem);
}

void start_servers() { avout::testing::start_shared_servers(); }

avout::ClientOptions options(std::size_t retry_limit = 10000) {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 4000ms,
                              .retry_limit = retry_limit};
}

std::string ref_name(const std::string& prefix, int index) {
  return prefix + "/r" + std::to_string(index);
}

std::string tag_path(avout::Client& client, const std::string& name) {
  return avout::inspect::tag_path(client, name);
}

}  // namespace

TEST_CASE("a read-only auditor's history misses make the writers of other processes keep history") {
  start_servers();
  const std::string prefix = unique_name("auditor");
  constexpr int refs_count = 10;
  constexpr int writers = 5;
  {
    avout::Client setup(options());
    avout::redis::Store redis(avout::testing::shared_redis().url());
    for (int i = 0; i < refs_count; ++i) (void)setup.ref<long>(ref_name(prefix, i), 100, redis);
  }
  const auto codes = avout::testing::run_in_processes(
      writers + 1,
      [&](int index) {
        auto settings = options(index == writers ? 60 : 10000);
        settings.min_history = 0;
        avout::Client client(settings);
        avout::redis::Store redis(avout::testing::shared_redis().url());
        std::vector<avout::Ref<long>> refs;
        for (int i = 0; i < refs_count; ++i)
          refs.push_back(client.ref<long>(ref_name(prefix, i), 100, redis));
        auto audited = client.atom<bool>(prefix + "/audited", false);
        const auto stop = std::chrono::steady_clock::now() + scaled(20s);
        if (index < writers) {
          // Each writer moves units between its own two refs: writers never miss each other's
          // history, so only the auditor's misses can make history grow.
          auto& from = refs[static_cast<std::size_t>(2 * index)];
          auto& to = refs[static_cast<std::size_t>(2 * index + 1)];
          for (long round = 0; !audited.deref() && std::chrono::steady_clock::now() < stop;
               ++round) {
            const long delta = round % 2 == 0 ? 1 : -1;
            client.dosync([&] {
              from.alter([](long v, long d) { return v - d; }, delta);
              to.alter([](long v, long d) { return v + d; }, delta);
            });
            std::this_thread::sleep_for(10ms);
          }
          return;
        }
        std::this_thread::sleep_for(300ms);  // let the writers start
        // An audit that takes a while: later refs are read well after the read point, when
        // their values of that moment are trimmed unless the writers keep history.
        const long total = client.dosync([&] {
          long sum = 0;
          for (auto& ref : refs) {
            sum += ref.deref();
            std::this_thread::sleep_for(2ms);
          }
          return sum;
        });
        audited.reset(true);
        if (total != refs_count * 100) throw std::runtime_error("audit saw a partial transfer");
        if (std::chrono::steady_clock::now() >= stop)
          throw std::runtime_error("audit outlasted the writers");
      },
      scaled(60s));
  CHECK(codes == std::vector<int>(writers + 1, 0));
}

TEST_CASE("an old transaction's claim on a ref makes processes that commute it give way") {
  start_servers();
  const std::string prefix = unique_name("commuted-claim");
  constexpr int commuters = 3;
  {
    avout::Client setup(options());
    (void)setup.ref<long>(prefix + "/hot", 0);
    (void)setup.ref<long>(prefix + "/count", 0);
  }
  const auto codes = avout::testing::run_in_processes(
      commuters + 1,
      [&](int index) {
        // The claimant gets few attempts: while commutes ignore its claim, a 30 ms body
        // never finds the ref unchanged at commit.
        avout::Client client(options(index == commuters ? 12 : 10000));
        auto hot = client.ref<long>(prefix + "/hot", 0);
        auto count = client.ref<long>(prefix + "/count", 0);
        auto done = client.atom<bool>(prefix + "/done", false);
        if (index == commuters) {
          std::this_thread::sleep_for(300ms);  // let the commutes start
          client.dosync([&] {
            hot.alter([](long v) { return v + 1000; });
            std::this_thread::sleep_for(30ms);
          });
          done.reset(true);
          return;
        }
        const auto stop = std::chrono::steady_clock::now() + scaled(20s);
        while (!done.deref() && std::chrono::steady_clock::now() < stop) {
          client.dosync([&] {
            hot.commute([](long v) { return v + 1; });
            count.commute([](long v) { return v + 1; });
          });
        }
      },
      scaled(60s));
  CHECK(codes == std::vector<int>(commuters + 1, 0));

  avout::Client client(options());
  auto hot = client.ref<long>(prefix + "/hot", 0);
  auto count = client.ref<long>(prefix + "/count", 0);
  CHECK(hot.deref() == 1000 + count.deref());
  CHECK(client.session().get(tag_path(client, prefix + "/hot")).data.empty());
}

TEST_CASE("a claim whose reply was lost ends with its dosync and makes nobody yield") {
  start_servers();
  const std::string name = unique_name("lost-claim");
  // Every attempt synced (snapshot isolation): the claim must come after the third.
  auto claimant_options = options();
  claimant_options.isolation = avout::Isolation::snapshot;
  avout::Client claimant(claimant_options);
  avout::Client meddler(options());
  avout::Client newcomer(options(1));  // one attempt: a yield would be RetryLimitExceeded
  auto mine = claimant.ref<long>(name, 0);
  auto theirs = meddler.ref<long>(name, 0);
  auto later = newcomer.ref<long>(name, 0);
  claimant.dosync([&] { mine.alter([](long v) { return v + 1; }); });  // session announced
  {
    avout::testing::FaultPlan plan(13, {.reply_lost = 1.0},
                                   avout::testing::shared_zookeeper().connect_string());
    avout::testing::FaultPlan::enable(false);
    int attempts = 0;
    CHECK_THROWS_WITH_AS(claimant.dosync([&] {
      ++attempts;
      avout::testing::FaultPlan::enable(false);
      if (attempts > 3) throw std::runtime_error("the claimant gives up");
      mine.alter([](long v) { return v + 1; });
      std::thread([&] {
        meddler.dosync([&] { theirs.alter([](long v) { return v + 10; }); });
      }).join();
      // The third failed attempt claims the ref: that claim's reply is lost. (Its commit
      // multi does not go out: the meddler's change was reported before it.)
      if (attempts == 3) avout::testing::FaultPlan::enable(true);
    }),
                         "the claimant gives up", std::runtime_error);
    CHECK(avout::testing::FaultPlan::counts().reply_lost >= 1);
  }
  CHECK(claimant.session().get(tag_path(claimant, name)).data.empty());
  newcomer.dosync([&] { later.alter([](long v) { return v + 100; }); });
  CHECK(later.deref() == 131);
}
