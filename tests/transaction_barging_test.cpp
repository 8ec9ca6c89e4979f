// Barging as ClientOptions::barging sets it: when a retrying transaction claims its refs,
// that a client with barging off never claims any, that every claim is dated (even one of a
// validated attempt's), which settings a client refuses, what a claimant's liveness costs, and
// that a yield waits for the claim to end instead of spinning.
#include "runtime/runtime.hpp"
#include "stm/barging.hpp"
#include "stm/transaction.hpp"

#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

avout::ClientOptions options(avout::BargingOptions barging) {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 6000ms,
                              .barging = barging};
}

// Runs one dosync on `ref` whose first `conflicts` attempts are each made to fail by a commit
// of another client; returns what the ref's tag held at the start of every attempt.
std::vector<bool> claimed_per_attempt(avout::Client& client, const std::string& name,
                                      int conflicts) {
  avout::Client other(options({}));
  auto ref = client.ref<long>(name, 0);
  auto rival = other.ref<long>(name, 0);
  const std::string tag = client.options().root + "/stm/tags" + name;
  std::vector<bool> claimed;
  client.dosync([&] {
    claimed.push_back(!client.session().get(tag).data.empty());
    ref.alter([](long v) { return v + 1; });
    if (static_cast<int>(claimed.size()) <= conflicts) {
      // Another thread: a dosync of another client may not run inside this one's.
      std::thread([&] {
        other.dosync([&] { rival.alter([](long v) { return v + 100; }); });
      }).join();
    }
  });
  CHECK(ref.deref() == 100 * conflicts + 1);
  CHECK(client.session().get(tag).data.empty());  // the claim ended with the dosync
  return claimed;
}

// Claims the tag of `client`'s ref `name` for a live transaction of `older` older than any
// other (its session announced by a dosync on a ref of its own under `prefix`), a change
// `client`'s cache has heard of; returns the tag's path.
std::string claim_as_oldest(avout::Client& older, avout::Client& client,
                            const std::string& prefix, const std::string& name) {
  auto own = older.ref<long>(prefix + "/own", 0);
  older.dosync([&] { own.alter([](long v) { return v + 1; }); });  // its session announced
  const std::string tag = avout::inspect::tag_path(older, name);
  const avout::detail::TransactionAge age{1, older.session().session_id(), 1};
  older.session().set(tag, avout::detail::encode_tag(age), older.session().get(tag).stat.version);
  client.session().sync(tag);  // the client's cached tag has heard of the change
  return tag;
}

}  // namespace

TEST_CASE("a transaction claims its refs after ClientOptions::barging.after failed attempts") {
  avout::testing::start_shared_servers();
  avout::Client client(options({.enabled = true, .after = 2}));
  const auto claimed =
      claimed_per_attempt(client, avout::testing::unique_name("/barging-test", "after-two"), 2);
  CHECK(claimed == std::vector<bool>{false, false, true});
}

TEST_CASE("a client with barging disabled never claims a ref, however often it retries") {
  avout::testing::start_shared_servers();
  avout::Client client(options({.enabled = false, .after = 1}));
  const auto claimed =
      claimed_per_attempt(client, avout::testing::unique_name("/barging-test", "disabled"), 3);
  CHECK(claimed == std::vector<bool>{false, false, false, false});
}

TEST_CASE(
    "a client whose barging.after is 0 is refused at construction, one whose after is 1 is not") {
  avout::testing::start_shared_servers();
  // Claims follow a failed attempt: "after 0 failed attempts" names no moment.
  CHECK_THROWS_AS(avout::Client(options({.enabled = true, .after = 0})), avout::InvalidOption);
  CHECK_THROWS_AS(avout::Client(options({.enabled = false, .after = 0})), avout::InvalidOption);
  CHECK_NOTHROW(avout::Client(options({.enabled = true, .after = 1})));
}

TEST_CASE(
    "with barging.after = 1 a validated first attempt that yields claims under an age of its "
    "own") {
  avout::testing::start_shared_servers();
  const std::string prefix = avout::testing::unique_name("/barging-test", "validated-claim");
  avout::Client older(options({}));
  avout::Client client(options({.enabled = true, .after = 1, .yield_limit = 1}));
  auto contended = client.ref<long>(prefix + "/contended", 0);
  auto spare = client.ref<long>(prefix + "/spare", 0);

  // The client's next dosync follows one that wrote: validated, it has no read point, so no
  // age until its first claim dates it.
  auto both = [&](long by) {
    contended.alter([by](long v) { return v + by; });
    spare.alter([by](long v) { return v + by; });
  };
  client.dosync([&] { both(0); });
  // An older live transaction claims one of the refs the validated attempt changes.
  const std::string tag = claim_as_oldest(older, client, prefix, contended.name());

  const auto retries = client.transaction_counts().second;
  int attempts = 0;
  std::optional<avout::inspect::TagOwner> claim;  // the spare ref's tag, during the retry
  client.dosync([&] {
    if (++attempts == 2) claim = avout::inspect::tag_owner(client, spare.name());
    both(1);
  });
  CHECK(attempts == 2);  // the validated attempt gave way once (yield_limit), then committed
  CHECK(client.transaction_counts().second == retries + 1);
  REQUIRE(claim.has_value());
  CHECK(claim->session == client.session().session_id());
  CHECK(claim->first_read_point > 0);
  CHECK(claim->counter > 0);
  CHECK_FALSE(
      avout::inspect::tag_owner(client, spare.name()).has_value());  // ended with the dosync
  older.session().set(tag, {}, older.session().get(tag).stat.version);
  CHECK(contended.deref() == 1);
}

TEST_CASE("a live claimant's liveness costs one read, then none until its session ends") {
  avout::testing::start_shared_servers();
  const std::string hosts = avout::testing::shared_zookeeper().connect_string();
  const avout::SessionOptions session_options{.hosts = hosts, .session_timeout = 6000ms};
  const avout::ClientOptions options{.hosts = hosts,
                                     .root = avout::testing::unique_name("/liveness-test", "root")};
  avout::ZooKeeperSession asking_session(session_options);
  avout::detail::Runtime asking(asking_session, options, nullptr);
  auto claimant_session = std::make_unique<avout::ZooKeeperSession>(session_options);
  auto claimant = std::make_unique<avout::detail::Runtime>(*claimant_session, options, nullptr);
  const auto claimant_id = claimant_session->session_id();

  CHECK(asking.alive(claimant_id));
  const auto before = asking_session.statistics().requests;
  for (int i = 0; i < 5; ++i) CHECK(asking.alive(claimant_id));
  CHECK(asking_session.statistics().requests == before);  // old code: one exists per call

  claimant.reset();
  claimant_session.reset();  // closing the session removes its liveness node
  const auto deadline = std::chrono::steady_clock::now() + scaled(10s);
  while (asking.alive(claimant_id) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  CHECK_FALSE(asking.alive(claimant_id));
  CHECK_FALSE(asking.alive(claimant_id + 1));  // never announced
}

TEST_CASE("a yield waits for the claimant's tag to change instead of retrying in a spin") {
  avout::testing::start_shared_servers();
  const std::string prefix = avout::testing::unique_name("/barging-test", "yield-waits");
  avout::Client older(options({}));
  avout::Client client(options({.enabled = true, .after = 1000, .yield_limit = 1000}));
  auto contended = client.ref<long>(prefix + "/contended", 0);
  client.dosync([&] { contended.alter([](long v) { return v; }); });  // the next is validated
  const std::string tag = claim_as_oldest(older, client, prefix, contended.name());

  // The claim is let go a while after the first yield. Until then every yield waits for the
  // tag to change, yield_wait_cap at the least: at most one yield per cap, plus the one the
  // release ends (a spin would have retried every few milliseconds).
  const auto retries = client.transaction_counts().second;
  const auto started = std::chrono::steady_clock::now();
  std::atomic<std::chrono::steady_clock::time_point> released{};
  std::thread releaser([&] {
    while (client.transaction_counts().second == retries) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(300ms);
    older.session().set(tag, {}, older.session().get(tag).stat.version);
    released = std::chrono::steady_clock::now();
  });
  int attempts = 0;
  client.dosync([&] {
    ++attempts;
    contended.alter([](long v) { return v + 1; });
  });
  releaser.join();
  const auto held = released.load() - started;
  const auto most = held / avout::detail::yield_wait_cap + 2;
  CHECK(attempts >= 2);
  CHECK(attempts - 1 <= most);
  CHECK(contended.deref() == 1);
}
