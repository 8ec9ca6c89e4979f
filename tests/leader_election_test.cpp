// LeaderElection against a real ZooKeeper, from threads and real processes: one leader at a
// time with fencing tokens strictly increasing, a deposed leader's guarded commit never
// lands, leader() readable by a process that never campaigns, campaign's deadline leaves
// nothing behind, a SIGKILLed leader hands over, a frozen (SIGSTOP) or cut-off leader stops
// believing before the next one leads, a leader whose session expires is told once
// (on_revoked) and campaigns again on the renewed session, a lost create reply counts once.
#include <avout/avout.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/tcp_relay.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using avout::testing::scaled;
using Clock = std::chrono::steady_clock;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/election-test", stem);
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 2000ms};
}

std::string folder_of(avout::Client& client, const std::string& name) {
  return client.options().root + "/elections" + name;
}

// The candidates' nodes in the election's folder.
std::size_t candidates(avout::Client& client, const std::string& name) {
  return client.session().children(folder_of(client, name)).size();
}

// One leadership as its leader saw it: its token, and from when to when it believed it led.
struct Term {
  std::uint64_t token = 0;
  std::int64_t from = 0, to = 0;
};

// The checker: tokens unique and increasing in the order the terms began, terms disjoint.
void check_one_leader_at_a_time(std::vector<Term> terms) {
  std::sort(terms.begin(), terms.end(),
            [](const Term& a, const Term& b) { return a.from < b.from; });
  for (std::size_t i = 1; i < terms.size(); ++i) {
    CHECK(terms[i].token > terms[i - 1].token);
    CHECK(terms[i].from >= terms[i - 1].to);
  }
}

// Waits until `condition` holds, at most `limit`.
template <typename F>
bool eventually(F condition, std::chrono::milliseconds limit) {
  const auto until = Clock::now() + limit;
  while (!condition()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

}  // namespace

TEST_CASE("4 processes x 2 candidates campaign and resign; one leader per token, in order") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("processes");
  const std::string ref_name = unique_name("last-token");
  const auto file =
      std::filesystem::temp_directory_path() / ("avout-election" + name.substr(name.rfind('-')));
  constexpr int processes = 4, threads = 2, rounds = 6;
  const auto codes = avout::testing::run_in_processes(
      processes,
      [&](int index) {
        avout::Client client(options());
        auto last = client.ref<long>(ref_name, 0);
        std::mutex out;
        std::vector<std::thread> candidates_here;
        std::exception_ptr failed;
        for (int t = 0; t < threads; ++t) {
          candidates_here.emplace_back([&, t] {
            try {
              auto election = client.leader_election(
                  name, "p" + std::to_string(index) + "-t" + std::to_string(t));
              for (int round = 0; round < rounds; ++round) {
                election.campaign(avout::Deadline::after(scaled(60s)));
                Term term{election.fencing_token(), avout::testing::now_us(), 0};
                if (term.token == 0) throw std::runtime_error("a leader without a token");
                if (election.leader() != election.id()) throw std::runtime_error("leader()");
                // The log: a guarded commit while leading must land, in token order.
                client.dosync(avout::guarded_by(election), [&] {
                  if (last.deref() >= static_cast<long>(term.token)) {
                    throw std::runtime_error("a token not above the last one logged");
                  }
                  last.ref_set(static_cast<long>(term.token));
                });
                std::this_thread::sleep_for(std::chrono::milliseconds(5 * (index + t)));
                term.to = avout::testing::now_us();
                election.resign();
                election.resign();  // idempotent
                bool landed = false;
                try {  // deposed: its guarded commit must not land
                  client.dosync(avout::guarded_by(election), [&] { last.ref_set(-1); });
                  landed = true;
                } catch (const avout::LockLost&) {
                }
                std::lock_guard lock(out);
                std::ofstream(file, std::ios::app)
                    << term.token << ' ' << term.from << ' ' << term.to << ' ' << landed << '\n';
              }
            } catch (...) {
              std::lock_guard lock(out);
              failed = std::current_exception();
            }
          });
        }
        for (auto& thread : candidates_here) thread.join();
        if (failed) std::rethrow_exception(failed);
      },
      scaled(120s));
  CHECK(codes == std::vector<int>(processes, 0));
  std::ifstream in(file);
  std::vector<Term> terms;
  Term term;
  bool landed = false;
  while (in >> term.token >> term.from >> term.to >> landed) {
    terms.push_back(term);
    CHECK_FALSE(landed);
  }
  std::filesystem::remove(file);
  REQUIRE(terms.size() == processes * threads * rounds);
  check_one_leader_at_a_time(terms);
  avout::Client client(options());
  const auto max = std::max_element(terms.begin(), terms.end(),
                                    [](auto& a, auto& b) { return a.token < b.token; });
  CHECK(client.ref<long>(ref_name, 0).deref() == static_cast<long>(max->token));
  CHECK(candidates(client, name) == 0);
}

TEST_CASE("leader() from a client that never campaigns; a campaign's deadline leaves nothing") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("reader");
  avout::Client leader_client(options());
  avout::Client reader_client(options());
  auto reader = reader_client.leader_election(name);
  CHECK(reader.leader() == std::nullopt);
  auto a = leader_client.leader_election(name, "host-a:8080");
  CHECK_FALSE(a.is_leader());
  CHECK(a.fencing_token() == 0);
  a.campaign();
  CHECK(a.is_leader());
  a.campaign();  // leads already: returns at once
  CHECK(reader.leader() == "host-a:8080");
  CHECK_FALSE(reader.is_leader());

  auto b = reader_client.leader_election(name, "host-b:8080");
  CHECK_THROWS_AS(b.campaign(avout::Deadline::after(300ms)), avout::Timeout);
  CHECK_FALSE(b.is_leader());
  CHECK(candidates(leader_client, name) == 1);  // b's node withdrawn
  CHECK_THROWS_AS(reader_client.dosync(avout::guarded_by(b), [] {}), avout::LockLost);

  const auto first_token = a.fencing_token();
  a.resign();
  CHECK_FALSE(a.is_leader());
  CHECK(a.fencing_token() == 0);
  CHECK(reader.leader() == std::nullopt);
  b.campaign(avout::Deadline::after(scaled(10s)));
  CHECK(reader.leader() == "host-b:8080");
  CHECK(b.fencing_token() > first_token);
  b.resign();
  a.campaign(avout::Deadline::after(scaled(10s)));  // after resign: campaigns again
  CHECK(a.is_leader());
}

TEST_CASE("a SIGKILLed leader hands over once its session ends") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("killed");
  const auto file =
      std::filesystem::temp_directory_path() / ("avout-election" + name.substr(name.rfind('-')));
  avout::testing::ChildProcess leader(0, [&](int) {
    avout::Client client(options());
    auto election = client.leader_election(name, "doomed");
    election.campaign(avout::Deadline::after(scaled(20s)));
    std::ofstream(file) << election.fencing_token() << '\n';
    std::this_thread::sleep_for(60s);  // killed here
  });
  REQUIRE(avout::testing::wait_for_file(file, scaled(20s)));
  std::this_thread::sleep_for(50ms);  // the token written out
  std::uint64_t dead_token = 0;
  std::ifstream(file) >> dead_token;
  std::filesystem::remove(file);
  avout::Client client(options());
  auto next = client.leader_election(name, "next");
  CHECK(next.leader() == "doomed");
  CHECK_THROWS_AS(next.campaign(avout::Deadline::after(200ms)), avout::Timeout);
  leader.signal(SIGKILL);
  (void)leader.wait(scaled(10s));
  next.campaign(avout::Deadline::after(scaled(30s)));
  CHECK(next.is_leader());
  CHECK(next.fencing_token() > dead_token);
  CHECK(next.leader() == "next");
}

TEST_CASE("a leader frozen past its session timeout never believes it leads; the next does") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("frozen");
  const auto file =
      std::filesystem::temp_directory_path() / ("avout-election" + name.substr(name.rfind('-')));
  const auto led = std::filesystem::path(file.string() + ".led");
  avout::testing::ChildProcess frozen(0, [&](int) {
    avout::Client client(options());
    auto election = client.leader_election(name, "frozen");
    std::atomic<int> revoked{0};
    election.on_revoked([&] { ++revoked; });
    election.campaign(avout::Deadline::after(scaled(20s)));
    std::ofstream(led) << election.fencing_token() << '\n';
    bool thawed = false, believed = false;
    auto last = Clock::now();
    const auto until = Clock::now() + scaled(60s);
    while (revoked == 0 && Clock::now() < until) {
      const auto before = Clock::now();
      const bool leads = election.is_leader();
      const auto after = Clock::now();
      if (after - before < 500ms) {  // a sample the freeze did not cut in two
        if (before - last > 1500ms) thawed = true;
        if (thawed && leads) believed = true;
      }
      last = after;
      std::this_thread::sleep_for(1ms);
    }
    std::ofstream(file) << thawed << ' ' << believed << ' ' << revoked << ' '
                        << election.is_leader() << '\n';
  });
  REQUIRE(avout::testing::wait_for_file(led, scaled(20s)));
  avout::Client client(options());
  auto next = client.leader_election(name, "next");
  frozen.signal(SIGSTOP);
  next.campaign(avout::Deadline::after(scaled(30s)));  // once the frozen one's session ended
  CHECK(next.leader() == "next");
  frozen.signal(SIGCONT);
  CHECK(frozen.wait(scaled(60s)) == 0);
  int thawed = 0, believed = 1, revoked = 0, leads = 1;
  std::ifstream(file) >> thawed >> believed >> revoked >> leads;
  std::filesystem::remove(file);
  std::filesystem::remove(led);
  CHECK(thawed == 1);
  CHECK(believed == 0);
  CHECK(revoked == 1);
  CHECK(leads == 0);
  CHECK(next.is_leader());
}

TEST_CASE("a leader whose session expires is told once, stops leading, and the next leads") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("expired");
  avout::Client first_client(options());
  avout::Client second_client(options());
  auto ref = first_client.ref<long>(unique_name("guarded"), 0);
  auto first = first_client.leader_election(name, "first");
  auto second = second_client.leader_election(name, "second");
  std::atomic<int> revoked{0};
  first.on_revoked([&] { ++revoked; });
  first.campaign();
  const auto first_token = first.fencing_token();
  auto campaigning =
      std::async(std::launch::async, [&] { second.campaign(avout::Deadline::after(scaled(30s))); });
  std::this_thread::sleep_for(100ms);
  // A forced expiry (a twin handle closes the session) ends it on the server before its
  // client can know, which a real server never does to a client that keeps heartbeating (the
  // liveness monitor's lapse comes first then). Once the client saw it, the old leader never
  // believes it leads again, also across the session's renewal (CURATOR-696, -653).
  first_client.session().expire_for_testing();
  REQUIRE(eventually([&] { return !first.is_leader(); }, scaled(10s)));
  std::atomic<bool> stop{false}, both{false}, first_believed{false};
  std::thread watcher([&] {
    while (!stop) {
      if (first.is_leader()) first_believed = true;
      if (first.is_leader() && second.is_leader()) both = true;
      std::this_thread::yield();
    }
  });
  campaigning.get();
  stop = true;
  watcher.join();
  CHECK_FALSE(both);
  CHECK_FALSE(first_believed);
  CHECK(second.is_leader());
  CHECK(second.fencing_token() > first_token);
  CHECK_FALSE(first.is_leader());
  CHECK(first.fencing_token() == 0);
  CHECK(eventually([&] { return revoked == 1; }, scaled(10s)));
  CHECK_THROWS_AS(first_client.dosync(avout::guarded_by(first), [&] { ref.ref_set(1); }),
                  avout::LockLost);
  CHECK(ref.deref() == 0);
  std::this_thread::sleep_for(100ms);
  CHECK(revoked == 1);  // once per lost leadership
  // After the loss it campaigns again, behind the new leader.
  CHECK_THROWS_AS(first.campaign(avout::Deadline::after(200ms)), avout::Timeout);
  const auto second_token = second.fencing_token();
  second.resign();
  first.campaign(avout::Deadline::after(scaled(10s)));
  CHECK(first.fencing_token() > second_token);
}

TEST_CASE("a leader cut off from ZooKeeper stops believing before the next one leads") {
  auto& server = avout::testing::shared_zookeeper();
  avout::testing::TcpRelay relay(server.port());
  const std::string name = unique_name("partitioned");
  avout::Client cut_off_client({.hosts = relay.connect_string(), .session_timeout = 2000ms});
  avout::Client other_client(options());
  auto first = cut_off_client.leader_election(name, "cut-off");
  auto second = other_client.leader_election(name, "other");
  std::atomic<int> revoked{0};
  first.on_revoked([&] { ++revoked; });
  first.campaign(avout::Deadline::after(scaled(10s)));
  std::atomic<std::int64_t> first_stopped{0};
  std::atomic<bool> stop{false};
  std::thread watcher([&] {
    while (!stop && first.is_leader()) std::this_thread::sleep_for(1ms);
    first_stopped = avout::testing::now_us();
  });
  relay.isolate();  // the server hears nothing more of it, and expires its session
  second.campaign(avout::Deadline::after(scaled(30s)));
  const auto second_leads = avout::testing::now_us();
  stop = true;
  watcher.join();
  CHECK(first_stopped <= second_leads);  // the lapse came before the server's expiry
  CHECK_FALSE(first.is_leader());
  CHECK(eventually([&] { return revoked == 1; }, scaled(10s)));
  relay.cut();  // back: the client hears of the expiry and renews its session
  CHECK(second.leader() == "other");
  std::this_thread::sleep_for(500ms);
  CHECK(revoked == 1);  // the lapse and the expiry are one lost leadership
  CHECK_FALSE(first.is_leader());
  second.resign();
  first.campaign(avout::Deadline::after(scaled(20s)));  // on the renewed session
  CHECK(first.is_leader());
  CHECK(second.leader() == "cut-off");
}

TEST_CASE("a lost create reply counts once") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("lost-reply");
  avout::Client client(options());
  auto election = client.leader_election(name, "once");
  avout::testing::fail_next(avout::testing::ZooKeeperCall::create, folder_of(client, name), 1,
                            true);
  election.campaign(avout::Deadline::after(scaled(20s)));
  CHECK(avout::testing::failures_to_come() == 0);
  CHECK(election.is_leader());
  CHECK(candidates(client, name) == 1);
  CHECK(election.leader() == "once");
  election.resign();
  CHECK(candidates(client, name) == 0);
}

// A leader's resign whose deletes fail (before they are sent) for longer than one session
// timeout, while its session lives on: its node must still go, or it would stay first in line
// and no other candidate would ever lead while that session lives.
TEST_CASE("a resign whose deletes fail for a session timeout still hands over") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("resign-fails");
  auto short_session = options();
  short_session.session_timeout = 1000ms;  // the shortest the test server grants
  avout::Client client(short_session);
  avout::Client other(options());
  auto leader = client.leader_election(name, "leader");
  auto next = other.leader_election(name, "next");
  leader.campaign(avout::Deadline::after(scaled(20s)));
  // More than a session timeout's worth of retries.
  avout::testing::fail_next(avout::testing::ZooKeeperCall::remove, folder_of(client, name), 12);
  leader.resign();
  CHECK_FALSE(leader.is_leader());
  next.campaign(avout::Deadline::after(scaled(30s)));
  CHECK(next.is_leader());
  CHECK(avout::testing::failures_to_come() == 0);
  next.resign();
}
