// What a commit costs ZooKeeper: one write, its multi (rule 16). The versions it trims and
// the marker of the thread's previous commit ride in that multi; a client's last markers go
// when it closes.
#include <avout/avout.hpp>
#include <avout/inspect.hpp>
#include <avout/redis.hpp>

#include "support/servers.hpp"
#include "support/tcp_relay.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <future>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

avout::ClientOptions options(const std::string& root = "/avout") {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 6000ms,
                              .root = root};
}

// A client whose every attempt takes a read point of its own (snapshot isolation).
avout::ClientOptions usual_options() {
  auto usual = options();
  usual.isolation = avout::Isolation::snapshot;
  return usual;
}

// ZooKeeper writes (zxids) `commit` makes, counted between two writes of a probe node on the
// same session (a session's requests are applied in order). min_history 0: every commit
// trims the version it replaces.
std::int64_t zookeeper_writes(avout::Client& client, const std::function<void()>& commit) {
  const std::string probe = client.options().root + "/zookeeper-writes-probe";
  client.session().create_recursive(probe);
  const auto before = client.session().set(probe, {}).mzxid;
  commit();
  const auto after = client.session().set(probe, {}).mzxid;
  return after - before - 1;
}

std::vector<std::string> markers(avout::Client& client) {
  return client.session().children(client.options().root + "/stm/markers");
}

// The markers left under `root` once the client that committed there has closed.
std::vector<std::string> markers_after_close(const std::string& root) {
  avout::Client observer(options(root));
  return markers(observer);
}

}  // namespace

TEST_CASE(
    "a commit costs ZooKeeper one write, trimmed versions and the previous marker riding in its "
    "multi") {
  avout::testing::start_shared_servers();
  avout::Client client(options());
  avout::redis::Store redis(avout::testing::shared_redis().url());
  const std::string zookeeper_name = avout::testing::unique_name("/zk-writes-test", "zk");
  auto in_zookeeper = client.ref<long>(zookeeper_name, 0);
  auto in_redis =
      client.ref<long>(avout::testing::unique_name("/zk-writes-test", "redis"), 0, redis);
  for (long v = 1; v <= 2; ++v) {  // versions to trim, and a marker to carry
    client.dosync([&] {
      in_zookeeper.ref_set(v);
      in_redis.ref_set(v);
    });
  }
  CHECK(zookeeper_writes(client, [&] { client.dosync([&] { in_zookeeper.ref_set(3); }); }) == 1);
  CHECK(zookeeper_writes(client, [&] { client.dosync([&] { in_redis.ref_set(3); }); }) == 1);
  CHECK(zookeeper_writes(client, [&] {
          client.dosync([&] {
            in_zookeeper.ref_set(4);
            in_redis.ref_set(4);
          });
        }) == 1);
  CHECK(in_zookeeper.deref() == 4);
  CHECK(in_redis.deref() == 4);
  // The trimmed ZooKeeper-held versions went with their commits: only the newest is left.
  CHECK(client.default_store()
            .reference_data(client.ref_value_key(zookeeper_name))
            ->points()
            .size() == 1);
}

TEST_CASE("a thread keeps only its last commit's marker, and closing the client removes it") {
  avout::testing::start_shared_servers();
  const std::string root = avout::testing::unique_name("/zk-writes-test", "markers");
  {
    avout::Client client(options(root));
    auto ref = client.ref<long>("/counted", 0);
    for (int i = 0; i < 3; ++i) client.dosync([&] { ref.alter([](long v) { return v + 1; }); });
    // Each commit took its predecessor's marker (the ref's creation's too) with it.
    CHECK(markers(client).size() == 1);
    CHECK(ref.deref() == 3);
  }
  CHECK(markers_after_close(root).empty());
}

TEST_CASE(
    "a carried marker removed meanwhile neither fails the next commit nor runs its body again") {
  avout::testing::start_shared_servers();
  const std::string root = avout::testing::unique_name("/zk-writes-test", "gone");
  avout::Client client(options(root));
  auto ref = client.ref<long>("/counted", 0);
  client.dosync([&] { ref.alter([](long v) { return v + 1; }); });
  const auto left = markers(client);
  REQUIRE(left.size() == 1);
  // As gc does once its grace has passed, or a commit whose reply was lost took it.
  client.session().remove(root + "/stm/markers/" + left.front(), 0);
  const auto [commits_before, retries_before] = client.transaction_counts();
  int runs = 0;
  client.dosync([&] {
    ++runs;
    ref.alter([](long v) { return v + 1; });
  });
  CHECK(runs == 1);
  CHECK(ref.deref() == 2);
  const auto [commits_after, retries_after] = client.transaction_counts();
  CHECK(commits_after == commits_before + 1);
  CHECK(retries_after == retries_before);
  CHECK(markers(client).size() == 1);  // the new commit's own
}

TEST_CASE(
    "threads of one client committing at once each land every commit exactly once and leave no "
    "marker after close") {
  avout::testing::start_shared_servers();
  const std::string root = avout::testing::unique_name("/zk-writes-test", "threads");
  constexpr int threads = 4;
  constexpr int commits = 15;
  {
    avout::Client client(options(root));
    avout::redis::Store redis(avout::testing::shared_redis().url());
    auto shared = client.ref<long>("/shared", 0);
    auto appended = client.ref<std::vector<long>>("/appended", {}, redis);
    std::vector<std::thread> running;
    for (int t = 0; t < threads; ++t) {
      running.emplace_back([&, t] {
        auto own = client.ref<long>("/own-" + std::to_string(t), 0);
        for (int i = 0; i < commits; ++i) {
          client.dosync([&] {
            shared.alter([](long v) { return v + 1; });
            appended.alter([&](std::vector<long> log) {
              log.push_back(t * 1000 + i);
              return log;
            });
            own.commute([](long v) { return v + 1; });
          });
        }
      });
    }
    for (auto& thread : running) thread.join();
    CHECK(shared.deref() == threads * commits);
    auto log = appended.deref();
    std::sort(log.begin(), log.end());
    CHECK(std::adjacent_find(log.begin(), log.end()) == log.end());  // each commit once
    CHECK(log.size() == static_cast<std::size_t>(threads * commits));
    for (int t = 0; t < threads; ++t)
      CHECK(client.ref<long>("/own-" + std::to_string(t), 0).deref() == commits);
    // At most one marker per thread that committed (the main thread created the refs).
    CHECK(markers(client).size() <= static_cast<std::size_t>(threads + 1));
  }
  CHECK(markers_after_close(root).empty());
}

// ZooKeeper requests `work` sends on the client's session.
std::uint64_t zookeeper_requests(avout::Client& client, const std::function<void()>& work) {
  const auto before = client.session().statistics().requests;
  work();
  return client.session().statistics().requests - before;
}

TEST_CASE(
    "a thread's next read-write transaction over the refs it just wrote costs ZooKeeper its multi "
    "alone, three in snapshot isolation, however many refs") {
  avout::testing::start_shared_servers();
  avout::redis::Store redis(avout::testing::shared_redis().url());
  for (const auto& placement : {std::pair{false, true}, std::pair{true, true},
                                std::pair{false, false}, std::pair{true, false}}) {
    const bool in_redis = placement.first;
    const bool validated = placement.second;
    CAPTURE(in_redis);
    CAPTURE(validated);
    avout::Client client(validated ? options() : usual_options());
    std::vector<avout::Ref<long>> refs;
    for (int i = 0; i < 8; ++i) {
      const auto name = avout::testing::unique_name("/zk-writes-test", "flat-" + std::to_string(i));
      refs.push_back(in_redis ? client.ref<long>(name, 0, redis) : client.ref<long>(name, 0));
    }
    auto add_one = [&] {
      client.dosync([&] {
        for (auto& ref : refs) ref.alter([](long v) { return v + 1; });
      });
    };
    add_one();
    // The heads the previous commit wrote are known from its own multi, current while nobody
    // else committed: a validated attempt sends the multi alone, which checks every head it
    // read; in snapshot isolation a sync and the clock (the read point) go first.
    for (int i = 0; i < 3; ++i) CHECK(zookeeper_requests(client, add_one) == (validated ? 1 : 3));
    for (auto& ref : refs) CHECK(ref.deref() == 4);
  }
}

TEST_CASE(
    "an attempt whose written ref changed since it was read retries without sending the multi that "
    "would fail") {
  avout::testing::start_shared_servers();
  // Snapshot isolation: a validated attempt over a head this client kept from its own commit
  // cannot see another client's change before its multi fails.
  avout::Client client(usual_options());
  avout::Client other(options());
  avout::redis::Store redis(avout::testing::shared_redis().url());
  for (const bool in_redis : {false, true}) {
    CAPTURE(in_redis);
    const auto name = avout::testing::unique_name("/zk-writes-test", "doomed");
    auto mine = in_redis ? client.ref<long>(name, 0, redis) : client.ref<long>(name, 0);
    auto theirs = in_redis ? other.ref<long>(name, 0, redis) : other.ref<long>(name, 0);
    auto add = [](avout::Client& by, avout::Ref<long>& ref, long d) {
      by.dosync([&] { ref.alter([](long v, long x) { return v + x; }, d); });
    };
    add(client, mine, 1);
    add(other, theirs, 10);  // from now on `mine`'s head is read with a watch
    int runs = 0;
    const auto writes = zookeeper_writes(client, [&] {
      client.dosync([&] {
        ++runs;
        mine.alter([](long v) { return v + 1; });
        if (runs == 1) {
          // Another thread: a dosync of another client may not run inside this one.
          std::async(std::launch::async, [&] { add(other, theirs, 100); }).get();
          // The change's notice reaches this session before the reply to a later request.
          (void)client.session().exists(client.options().root);
        }
      });
    });
    CHECK(runs == 2);
    CHECK(writes == 2);  // theirs and ours; a multi sent and failed would have been a third
    CHECK(mine.deref() == 112);
  }
}

TEST_CASE(
    "a client that alone commits reads none of the heads it wrote again, however many refs it "
    "cycles through") {
  avout::testing::start_shared_servers();
  for (const bool validated : {true, false}) {
    CAPTURE(validated);
    avout::Client client(validated ? options() : usual_options());
    std::vector<avout::Ref<long>> refs;
    for (int i = 0; i < 10; ++i) {
      refs.push_back(client.ref<long>(
          avout::testing::unique_name("/zk-writes-test", "cycle-" + std::to_string(i)), 0));
    }
    auto transfer = [&](std::size_t from) {
      client.dosync([&] {
        refs[from].alter([](long v) { return v - 1; });
        refs[(from + 1) % refs.size()].alter([](long v) { return v + 1; });
      });
    };
    for (std::size_t i = 0; i < refs.size(); ++i) transfer(i);  // every head kept once
    // Every commit since is this client's (the clock's version grew by one each time), so each
    // head it kept is still the head, however many commits ago it was kept.
    for (std::size_t i = 0; i < 2 * refs.size(); ++i) {
      CHECK(zookeeper_requests(client, [&] { transfer((i * 3) % refs.size()); }) ==
            (validated ? 1 : 3));
    }
    long total = 0;
    for (auto& ref : refs) total += ref.deref();
    CHECK(total == 0);
  }
}

TEST_CASE(
    "a head kept from this client's own commit is read again once another client committed, to "
    "that ref or any other") {
  avout::testing::start_shared_servers();
  avout::Client client(usual_options());  // requests counted below are those of a read point
  avout::Client other(options());
  const auto name = avout::testing::unique_name("/zk-writes-test", "moved");
  auto mine = client.ref<long>(name, 0);
  auto theirs = other.ref<long>(name, 0);
  auto unrelated = other.ref<long>(avout::testing::unique_name("/zk-writes-test", "unrelated"), 0);
  auto add = [](avout::Ref<long>& ref, avout::Client& by, long d) {
    by.dosync([&] { ref.alter([](long v, long x) { return v + x; }, d); });
  };
  for (int round = 0; round < 20; ++round) {
    add(mine, client, 1);     // kept unwatched at this commit's zxid
    add(theirs, other, 100);  // moves the head and the clock
    CHECK(client.dosync([&] { return mine.deref(); }) == 103 * round + 101);
    add(mine, client, 1);
    add(unrelated, other, 1);  // moves only the clock: the kept head is read again all the same
    long seen = 0;
    const auto requests = zookeeper_requests(client, [&] {
      seen = client.dosync([&] {
        mine.alter([](long v) { return v + 1; });
        return mine.deref();
      });
    });
    CHECK(seen == 103 * round + 103);
    CHECK(requests == 4);  // sync, the clock, the head read again, the multi
  }
  CHECK(theirs.deref() == 103 * 20);
  // Our own commit after theirs does not vouch for heads kept before theirs.
  auto elsewhere = client.ref<long>(avout::testing::unique_name("/zk-writes-test", "elsewhere"), 0);
  add(mine, client, 1);
  add(theirs, other, 100);
  add(elsewhere, client, 1);
  CHECK(client.dosync([&] { return mine.deref(); }) == 103 * 20 + 101);
}

TEST_CASE(
    "a thread that moves on to other refs does not read again the heads its last commit kept") {
  avout::testing::start_shared_servers();
  avout::Client client(usual_options());  // requests counted below are those of a read point
  avout::Client other(options());
  auto x = client.ref<long>(avout::testing::unique_name("/zk-writes-test", "x"), 0);
  auto y = client.ref<long>(avout::testing::unique_name("/zk-writes-test", "y"), 0);
  auto elsewhere = other.ref<long>(avout::testing::unique_name("/zk-writes-test", "w"), 0);
  auto bump = [&](avout::Ref<long>& ref) {
    client.dosync([&] { ref.alter([](long v) { return v + 1; }); });
  };
  for (int i = 0; i < 3; ++i) {  // both heads read, watched, after another client's commit
    bump(x);
    bump(y);
    other.dosync([&] { elsewhere.alter([](long v) { return v + 1; }); });
  }
  // x and y by turns, another client committing between: each transaction reads again the
  // head it writes (kept two commits ago, before another client's commit), and leaves alone
  // the one its predecessor kept: sync, the clock, one head, the multi.
  for (int i = 0; i < 6; ++i) {
    other.dosync([&] { elsewhere.alter([](long v) { return v + 1; }); });
    CHECK(zookeeper_requests(client, [&] { bump(i % 2 == 0 ? x : y); }) == 4);
  }
  CHECK(x.deref() == 6);
  CHECK(y.deref() == 6);
}

// A client whose ZooKeeper connection goes through `relay`.
avout::ClientOptions options_through(const avout::testing::TcpRelay& relay) {
  auto relayed = options();
  relayed.hosts = relay.connect_string();
  return relayed;
}

// Runs `work` on another thread while `relay` holds what its client sends: whether `needle`
// went out before any reply could come back. Then lets everything through and awaits `work`
// (a future, not a thread: a failure of it fails the test instead of aborting it).
bool sent_before_any_reply(avout::testing::TcpRelay& relay, const std::string& needle,
                           const std::function<void()>& work) {
  relay.hold();
  auto running = std::async(std::launch::async, work);
  const bool sent = relay.keeps(needle, scaled(2s));
  relay.release();
  CHECK_NOTHROW(running.get());
  return sent;
}

TEST_CASE("an attempt's first head read goes out with the sync and the clock, before any reply") {
  avout::testing::start_shared_servers();
  avout::testing::TcpRelay relay(avout::testing::shared_zookeeper().port());
  avout::Client reader(options_through(relay));
  avout::Client writer(options());
  const auto name = avout::testing::unique_name("/zk-writes-test", "pipelined");
  auto theirs = writer.ref<long>(name, 1);
  auto mine = reader.ref<long>(name, 0);
  writer.dosync([&] { theirs.alter([](long v) { return v + 1; }); });
  // The reader's cached head, if any, is dropped by its watch, whose event comes before the
  // reply of this later request.
  (void)reader.session().exists("/");
  long seen = 0;
  // The head's read is on the wire while the clock's reply cannot have come back (old code:
  // the head was asked for only once the read point was in).
  CHECK(sent_before_any_reply(relay, avout::inspect::ref_head_path(reader, name),
                              [&] { seen = reader.dosync([&] { return mine.deref(); }); }));
  CHECK(seen == 2);
}

TEST_CASE(
    "deref_all asks for every head a body has not read yet with the read point, before any reply") {
  avout::testing::start_shared_servers();
  avout::testing::TcpRelay relay(avout::testing::shared_zookeeper().port());
  avout::Client reader(options_through(relay));
  avout::Client writer(options());
  std::vector<std::string> names;
  std::vector<avout::Ref<long>> mine, theirs;
  for (int i = 0; i < 4; ++i) {
    names.push_back(
        avout::testing::unique_name("/zk-writes-test", "together-" + std::to_string(i)));
    theirs.push_back(writer.ref<long>(names.back(), 0));
    mine.push_back(reader.ref<long>(names.back(), 0));
  }
  writer.dosync([&] {
    for (auto& ref : theirs) ref.ref_set(1);
  });
  // The reader's cached heads, if any, are dropped by their watches, whose events come
  // before the reply of this later request.
  (void)reader.session().exists("/");
  const std::string last_head = avout::inspect::ref_head_path(reader, names.back());
  long sum = 0;
  // deref() one after another would ask for the last head only once the others were in.
  CHECK(sent_before_any_reply(relay, last_head, [&] {
    reader.dosync([&] {
      const auto [a, b, c, d] = avout::deref_all(mine[0], mine[1], mine[2], mine[3]);
      mine[0].alter([](long v, long x) { return v + x; }, b + c + d);  // its head is read already
      sum = a + b + c + d;
    });
  }));
  CHECK(sum == 4);
  CHECK(mine[0].deref() == 4);
  // Outside dosync: one snapshot of their own, asked for the same way (a relay holds once:
  // another one, and a client through it).
  avout::testing::TcpRelay second_relay(avout::testing::shared_zookeeper().port());
  avout::Client outsider(options_through(second_relay));
  std::vector<avout::Ref<long>> seen;
  for (const auto& name : names) seen.push_back(outsider.ref<long>(name, 0));
  std::tuple<long, long, long, long> outside;
  CHECK(sent_before_any_reply(second_relay, last_head, [&] {
    outside = avout::deref_all(seen[0], seen[1], seen[2], seen[3]);
  }));
  CHECK(outside == std::tuple<long, long, long, long>{4, 1, 1, 1});
}

TEST_CASE(
    "a written ref's barging tag is asked for with its head, not in a round trip of the commit's "
    "own") {
  avout::testing::start_shared_servers();
  avout::testing::TcpRelay relay(avout::testing::shared_zookeeper().port());
  avout::Client writer(options_through(relay));
  avout::Client claimer(options());
  const auto name = avout::testing::unique_name("/zk-writes-test", "tagged");
  auto mine = writer.ref<long>(name, 1);
  // Another client's claim and release change the tag: the writer's cached copy, if any, is
  // dropped by its watch, whose event comes before the reply of this later request.
  claimer.session().set(avout::inspect::tag_path(claimer, name), {});
  (void)writer.session().exists("/");
  // Old code: the tag was asked for at commit, once the head and the read point were in.
  CHECK(sent_before_any_reply(relay, avout::inspect::tag_path(writer, name), [&] {
    writer.dosync([&] { mine.alter([](long v) { return v + 1; }); });
  }));
  CHECK(mine.deref() == 2);
}

TEST_CASE(
    "an agent's action costs ZooKeeper its send and one commit write, its value in ZooKeeper or "
    "elsewhere") {
  avout::testing::start_shared_servers();
  for (const bool in_redis : {true, false}) {
    CAPTURE(in_redis);
    const std::string root = avout::testing::unique_name("/zk-writes-test", "agent");
    {
      avout::Client client(options(root));
      avout::redis::Store redis(avout::testing::shared_redis().url());
      auto agent =
          in_redis ? client.agent<long>("/counted", 0, redis) : client.agent<long>("/counted", 0);
      for (int i = 0; i < 2; ++i) {  // a marker for the worker thread to carry
        agent.send([](long v) { return v + 1; });
        agent.await(scaled(30s));
      }
      // A value ZooKeeper holds is created, and the one it replaces removed, by that write.
      CHECK(zookeeper_writes(client, [&] {
              agent.send([](long v) { return v + 1; });
              agent.await(scaled(30s));
            }) == 2);
      CHECK(agent.deref() == 3);
      avout::Store& store = in_redis ? static_cast<avout::Store&>(redis) : client.default_store();
      CHECK(store.reference_data(client.agent_value_key("/counted"))->points().size() == 1);
    }
    CHECK(markers_after_close(root).empty());
  }
}

TEST_CASE(
    "an agent's carried markers removed meanwhile neither fail its next batches nor run their "
    "actions again") {
  avout::testing::start_shared_servers();
  const std::string root = avout::testing::unique_name("/zk-writes-test", "agent-gone");
  avout::Client client(options(root));
  avout::redis::Store redis(avout::testing::shared_redis().url());
  auto agent = client.agent<long>("/counted", 0, redis);
  std::atomic<int> runs{0};
  auto count = [&](long v) {
    ++runs;
    return v + 1;
  };
  // Batches run on the fixed pool (one worker per core): once there were more batches than
  // workers, some worker's batch carries a marker of its own removed meanwhile.
  const int batches = static_cast<int>(std::max(2u, std::thread::hardware_concurrency())) + 2;
  for (int i = 0; i < batches; ++i) {
    agent.send(count);
    agent.await(scaled(30s));
    const auto left = markers(client);
    CHECK(left.size() == 1);  // its worker's previous marker went with this batch or before
    for (const auto& marker : left) client.session().remove(root + "/stm/markers/" + marker, 0);
  }
  CHECK(runs == batches);
  CHECK(agent.deref() == batches);
  CHECK(!agent.error());
}
