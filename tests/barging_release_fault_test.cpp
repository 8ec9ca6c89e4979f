// A claim ends with its dosync (docs/transactions.md rule 10), whatever the network did
// meanwhile: a dosync that ends while ZooKeeper fails every request leaves its release to the
// client, which settles it once ZooKeeper answers again, so nobody gives way to a claimant
// that has long returned.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/tcp_relay.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <optional>
#include <stdexcept>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::FaultPlan;
using avout::testing::scaled;

namespace {

std::string hosts() { return avout::testing::shared_zookeeper().connect_string(); }

avout::ClientOptions options(avout::BargingOptions barging = {}) {
  return avout::ClientOptions{.hosts = hosts(), .session_timeout = 6000ms, .barging = barging};
}

// Claims after its first failed attempt, which reads at a synced read point (snapshot
// isolation), as these tests expect.
avout::ClientOptions claimant_options(const std::string& through = hosts()) {
  auto claimant = options({.after = 1});
  claimant.hosts = through;
  claimant.isolation = avout::Isolation::snapshot;
  return claimant;
}

// A dosync of `claimant` on `name` claims the ref after its first attempt, which another
// client's commit made fail (its claim's reply lost when `claim_reply_lost`); its second
// attempt gives up by throwing once `begin_blip` has made ZooKeeper unreachable. The caller
// ends the blip a while after the dosync has thrown, as a network would.
void claim_then_give_up_in_a_blip(avout::Client& claimant, const std::string& name,
                                  const std::function<void()>& begin_blip,
                                  bool claim_reply_lost = false) {
  avout::Client meddler(options());
  auto mine = claimant.ref<long>(name, 0);
  auto theirs = meddler.ref<long>(name, 0);
  claimant.dosync([&] { mine.alter([](long v) { return v + 1; }); });  // its session announced
  std::optional<FaultPlan> lost;
  int attempts = 0;
  CHECK_THROWS_WITH_AS(claimant.dosync([&] {
    if (++attempts == 1) {
      mine.alter([](long v) { return v + 1; });
      std::thread([&] {
        meddler.dosync([&] { theirs.alter([](long v) { return v + 10; }); });
      }).join();
      // The failed attempt's claim (barging.after = 1) follows its commit.
      if (claim_reply_lost)
        lost.emplace(7, avout::testing::ZooKeeperFaultRates{.reply_lost = 1.0}, hosts());
      return;
    }
    if (claim_reply_lost) CHECK(FaultPlan::counts().reply_lost >= 1);
    lost.reset();
    const auto owner = avout::inspect::tag_owner(meddler, name);
    REQUIRE(owner.has_value());
    REQUIRE(owner->session == claimant.session().session_id());
    begin_blip();
    throw std::runtime_error("the claimant gives up");
  }),
                       "the claimant gives up", std::runtime_error);
  CHECK(attempts == 2);
}

// A blip of every ZooKeeper request of this process failing early, for
// `claim_then_give_up_in_a_blip`.
struct FailingRequests {
  std::optional<FaultPlan> plan;
  void begin() {
    plan.emplace(11, avout::testing::ZooKeeperFaultRates{.fail_early = 1.0}, hosts());
  }
  void end() {
    std::this_thread::sleep_for(500ms);
    CHECK(FaultPlan::counts().fail_early >= 1);
    plan.reset();
  }
};

// Waits (bounded) until nobody claims `name`; true when nobody does.
bool claim_ends(avout::Client& client, const std::string& name) {
  const auto deadline = std::chrono::steady_clock::now() + scaled(5s);
  while (avout::inspect::tag_owner(client, name) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  return !avout::inspect::tag_owner(client, name).has_value();
}

// A dosync of another client on `name` after the claimant's, which leave it at `before`: how
// many attempts gave way.
std::uint64_t newcomer_retries(const std::string& name, long before = 11) {
  avout::Client newcomer(options({.yield_limit = 3}));
  auto later = newcomer.ref<long>(name, 0);
  newcomer.dosync([&] { later.alter([](long v) { return v + 100; }); });
  CHECK(later.deref() == before + 100);
  return newcomer.transaction_counts().second;
}

}  // namespace

TEST_CASE(
    "a claim whose release meets a blip ends once ZooKeeper answers again, and nobody yields to "
    "it") {
  avout::testing::start_shared_servers();
  const std::string name = avout::testing::unique_name("/barging-release", "blip");
  avout::Client claimant(claimant_options());
  FailingRequests blip;
  claim_then_give_up_in_a_blip(claimant, name, [&] { blip.begin(); });
  blip.end();
  avout::Client observer(options());
  CHECK(claim_ends(observer, name));
  CHECK(newcomer_retries(name) == 0);
}

TEST_CASE("a claim whose reply was lost and whose release meets a blip ends all the same") {
  avout::testing::start_shared_servers();
  const std::string name = avout::testing::unique_name("/barging-release", "lost-claim");
  avout::Client claimant(claimant_options());
  FailingRequests blip;
  claim_then_give_up_in_a_blip(
      claimant, name, [&] { blip.begin(); }, true);
  blip.end();
  avout::Client observer(options());
  CHECK(claim_ends(observer, name));
  CHECK(newcomer_retries(name) == 0);
}

TEST_CASE("a claim whose dosync ends while its connection is cut ends once the client reconnects") {
  avout::testing::start_shared_servers();
  const std::string name = avout::testing::unique_name("/barging-release", "cut");
  avout::testing::TcpRelay relay(avout::testing::shared_zookeeper().port());
  avout::Client claimant(claimant_options(relay.connect_string()));
  claim_then_give_up_in_a_blip(claimant, name, [&] {
    relay.set(avout::testing::TcpRelay::Mode::refuse);
    relay.cut();
  });
  std::this_thread::sleep_for(1s);  // well within the session timeout: the session lives on
  relay.set(avout::testing::TcpRelay::Mode::pass);
  avout::Client observer(options());
  CHECK(claim_ends(observer, name));
  CHECK(newcomer_retries(name) == 0);
}

TEST_CASE("a claim taken again, its reply lost, still ends with its dosync") {
  // A dosync claims its ref after each failed attempt: the second claim lands on top of the
  // first (the tag's version moves on) but its reply is lost. The release must not take the
  // first claim's version for the tag's: that set fails, and the claim would outlive its
  // dosync for as long as the session lives.
  avout::testing::start_shared_servers();
  const std::string name = avout::testing::unique_name("/barging-release", "claimed-twice");
  const std::string tag = "/avout/stm/tags" + name;
  avout::Client claimant(claimant_options());
  avout::Client meddler(options({.yield_limit = 0}));  // commits over the claim at once
  auto mine = claimant.ref<long>(name, 0);
  auto theirs = meddler.ref<long>(name, 0);
  claimant.dosync([&] { mine.alter([](long v) { return v + 1; }); });
  std::int32_t first_claim = -1;
  int attempts = 0;
  CHECK_THROWS_WITH_AS(claimant.dosync([&] {
    ++attempts;
    if (attempts == 2) {
      first_claim = meddler.session().get(tag).stat.version;
      REQUIRE(avout::inspect::tag_owner(meddler, name)->session == claimant.session().session_id());
      avout::testing::fail_next(avout::testing::ZooKeeperCall::set, tag, 1, true);
    }
    if (attempts <= 2) {  // a conflict: the attempt fails, and its refs are claimed
      mine.alter([](long v) { return v + 1; });
      std::thread([&] {
        meddler.dosync([&] { theirs.alter([](long v) { return v + 10; }); });
      }).join();
      return;
    }
    CHECK(avout::testing::failures_to_come() == 0);
    CHECK(meddler.session().get(tag).stat.version == first_claim + 1);  // the second claim
    throw std::runtime_error("the claimant gives up");
  }),
                       "the claimant gives up", std::runtime_error);
  CHECK(attempts == 3);
  avout::Client observer(options());
  CHECK(claim_ends(observer, name));
  CHECK(newcomer_retries(name, 21) == 0);
}
