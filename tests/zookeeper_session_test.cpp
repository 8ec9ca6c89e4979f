// The ZooKeeper session wrapper against real servers: every operation, multi atomicity,
// watches, session expiry and renewal, a dead server, and an ensemble losing its leader.
#include <avout/errors.hpp>
#include <avout/zookeeper_session.hpp>

#include "support/servers.hpp"
#include "support/tcp_relay.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

avout::SessionOptions options_for(const std::string& hosts) {
  return avout::SessionOptions{
      .hosts = hosts, .session_timeout = 4000ms, .connect_timeout = scaled(10000ms)};
}

std::string unique_path(const std::string& stem) {
  return avout::testing::unique_name("/session-test", stem);
}

// Collects events from callbacks on other threads; waits with a deadline.
template <typename T>
class Inbox {
 public:
  void push(T item) {
    std::lock_guard lock(mutex_);
    items_.push_back(std::move(item));
    arrived_.notify_all();
  }
  bool wait_for_count(std::size_t count, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return arrived_.wait_for(lock, timeout, [&] { return items_.size() >= count; });
  }
  bool wait_for_item(const T& wanted, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return arrived_.wait_for(lock, timeout, [&] {
      return std::find(items_.begin(), items_.end(), wanted) != items_.end();
    });
  }
  // True once `first` was seen and `then` after it.
  bool wait_for_sequence(const T& first, const T& then, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return arrived_.wait_for(lock, timeout, [&] {
      auto at = std::find(items_.begin(), items_.end(), first);
      return at != items_.end() && std::find(at, items_.end(), then) != items_.end();
    });
  }
  std::vector<T> items() {
    std::lock_guard lock(mutex_);
    return items_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<T> items_;
};

}  // namespace

TEST_CASE("create, get, exists, set, children and remove work synchronously") {
  avout::ZooKeeperSession session(options_for(avout::testing::shared_zookeeper().connect_string()));
  const std::string base = unique_path("sync");
  session.create_recursive(base);
  const std::string node = base + "/node";
  CHECK(session.create(node, avout::to_bytes("one")) == node);
  auto read = session.get(node);
  CHECK(read.data == avout::to_bytes("one"));
  CHECK(read.stat.version == 0);
  CHECK(read.stat.mzxid > 0);
  CHECK(session.exists(node).has_value());
  CHECK_FALSE(session.exists(base + "/absent").has_value());
  auto changed = session.set(node, avout::to_bytes("two"), 0);
  CHECK(changed.version == 1);
  CHECK(changed.mzxid > read.stat.mzxid);
  CHECK_THROWS_AS(session.set(node, avout::to_bytes("three"), 0), avout::BadVersion);
  const std::string sequential =
      session.create(base + "/seq-", {}, avout::CreateMode::persistent_sequential);
  CHECK(sequential.size() == (base + "/seq-").size() + 10);
  const std::string ephemeral = session.create(base + "/eph", {}, avout::CreateMode::ephemeral);
  CHECK(session.exists(ephemeral)->ephemeral_owner == session.session_id());
  auto names = session.children(base);
  CHECK(names.size() == 3);
  CHECK_THROWS_AS(session.remove(base), avout::NotEmpty);
  CHECK_THROWS_AS(session.remove(node, 0), avout::BadVersion);
  session.remove(node, 1);
  try {
    session.get(node);
    FAIL("get of a removed node must throw");
  } catch (const avout::NoNode& error) {
    CHECK(error.path() == node);
    CHECK(error.code() != 0);
  }
  CHECK_THROWS_AS(session.create(ephemeral, {}), avout::NodeExists);
  session.sync(base);
}

TEST_CASE("create_recursive makes every missing level, and costs one create once they exist") {
  avout::ZooKeeperSession session(options_for(avout::testing::shared_zookeeper().connect_string()));
  const std::string base = unique_path("recursive");
  const std::string deep = base + "/a/b/c/d";
  session.create_recursive(deep);
  CHECK(session.exists(deep).has_value());
  session.create_recursive(deep);  // present: no error
  // Every write request takes a zxid, a refused create too (the server logs it as an error
  // transaction), so the zxids between two probes count the creates sent in between. Another
  // session's close may take one as well: the fewest over a few tries is the count.
  std::int64_t fewest = 1000;
  for (int i = 0; i < 5; ++i) {
    const auto before = session.exists(session.create(base + "/probe-", {},
                                                       avout::CreateMode::persistent_sequential));
    session.create_recursive(deep + "/leaf-" + std::to_string(i));
    const auto after = session.exists(session.create(base + "/probe-", {},
                                                      avout::CreateMode::persistent_sequential));
    REQUIRE(before.has_value());
    REQUIRE(after.has_value());
    fewest = std::min(fewest, after->czxid - before->czxid - 1);
  }
  CHECK(fewest == 1);
  CHECK(session.exists(deep + "/leaf-4").has_value());
}

TEST_CASE("pipelined async reads return in order with their own data") {
  avout::ZooKeeperSession session(options_for(avout::testing::shared_zookeeper().connect_string()));
  const std::string base = unique_path("async");
  session.create_recursive(base);
  std::vector<std::future<std::string>> created;
  for (int i = 0; i < 20; ++i) {
    created.push_back(session.create_async(base + "/n" + std::to_string(i),
                                           avout::to_bytes(std::to_string(i)),
                                           avout::CreateMode::persistent));
  }
  for (auto& reply : created) session.wait(reply);
  std::vector<std::future<avout::NodeData>> reads;
  for (int i = 0; i < 20; ++i) reads.push_back(session.get_async(base + "/n" + std::to_string(i)));
  for (int i = 0; i < 20; ++i) {
    CHECK(session.wait(reads[static_cast<std::size_t>(i)]).data ==
          avout::to_bytes(std::to_string(i)));
  }
  auto removed = session.remove_async(base + "/n0", -1);
  session.wait(removed);
  auto gone = session.exists_async(base + "/n0");
  CHECK_FALSE(session.wait(gone).has_value());
}

TEST_CASE("a multi applies all operations, and a failing check applies none") {
  avout::ZooKeeperSession session(options_for(avout::testing::shared_zookeeper().connect_string()));
  const std::string base = unique_path("multi");
  session.create_recursive(base + "/a");
  const std::vector<avout::Operation> good{
      avout::op::Create{base + "/b", avout::to_bytes("b"), avout::CreateMode::persistent},
      avout::op::SetData{base + "/a", avout::to_bytes("a1"), 0}, avout::op::Check{base + "/a", 1}};
  auto done = session.multi(good);
  REQUIRE(done.committed);
  CHECK(done.results[0].created_path == base + "/b");
  CHECK(done.results[1].stat.version == 1);

  const std::vector<avout::Operation> bad{
      avout::op::Create{base + "/c", {}, avout::CreateMode::persistent},
      avout::op::SetData{base + "/a", avout::to_bytes("a2"), 1}, avout::op::Check{base + "/b", 7},
      avout::op::Remove{base + "/b", 0}};
  auto failed = session.multi(bad);
  CHECK_FALSE(failed.committed);
  CHECK(failed.failed_index == 2);
  CHECK_THROWS_AS(failed.throw_if_failed(bad), avout::BadVersion);
  CHECK_FALSE(session.exists(base + "/c").has_value());
  CHECK(session.get(base + "/a").data == avout::to_bytes("a1"));
  CHECK(session.exists(base + "/b").has_value());
}

TEST_CASE("a one-shot watch fires exactly once; a persistent watch sees every change") {
  avout::ZooKeeperSession session(options_for(avout::testing::shared_zookeeper().connect_string()));
  const std::string node = unique_path("watch");
  session.create_recursive(node);
  Inbox<avout::WatchEvent> once;
  session.get(node, [&](const avout::WatchEvent& event) { once.push(event); });
  session.set(node, avout::to_bytes("1"));
  session.set(node, avout::to_bytes("2"));
  REQUIRE(once.wait_for_count(1, scaled(5s)));
  std::this_thread::sleep_for(300ms);
  CHECK(once.items().size() == 1);
  CHECK(once.items()[0].type == avout::WatchEventType::changed);

  Inbox<avout::WatchEvent> children;
  session.children(node, [&](const avout::WatchEvent& event) { children.push(event); });
  session.create(node + "/child", {});
  REQUIRE(children.wait_for_count(1, scaled(5s)));
  CHECK(children.items()[0].type == avout::WatchEventType::children_changed);

  Inbox<avout::WatchEvent> every;
  auto subscription =
      session.watch_persistently(node, [&](const avout::WatchEvent& event) { every.push(event); });
  for (int i = 0; i < 3; ++i) {
    session.set(node, avout::to_bytes(std::to_string(i)));
    REQUIRE(every.wait_for_count(static_cast<std::size_t>(i) + 1, scaled(5s)));
  }
  subscription.reset();
  session.set(node, avout::to_bytes("after"));
  std::this_thread::sleep_for(300ms);
  CHECK(every.items().size() == 3);
}

TEST_CASE(
    "a persistent watch calls back once re-armed: what the callback then reads is at "
    "least as new as any change it will not hear of") {
  // A callback that reads elsewhere (a value held in Redis, say) must not read before the
  // re-arm reached the server: a change falling between that read and the arm would fire
  // nothing, and the reader would stay on the older value.
  auto& zookeeper = avout::testing::shared_zookeeper();
  avout::testing::TcpRelay relay(zookeeper.port());
  auto slow = options_for(relay.connect_string());
  slow.session_timeout = 10000ms;  // its pings wait in the relay too
  avout::ZooKeeperSession watcher(slow);
  avout::ZooKeeperSession writer(options_for(zookeeper.connect_string()));
  const std::string node = unique_path("rearmed");
  writer.create_recursive(node);
  writer.set(node, avout::to_bytes("0"));
  Inbox<int> heard;
  auto subscription =
      watcher.watch_persistently(node, [&](const avout::WatchEvent&) { heard.push(1); });
  (void)watcher.exists(node);  // the first arm has reached the server
  std::size_t read_for = 0;
  avout::Bytes last;
  // What the watching side knows: on each callback it reads the node afresh.
  const auto read_on_news = [&](std::chrono::milliseconds wait) {
    if (!heard.wait_for_count(read_for + 1, wait)) return false;
    read_for = heard.items().size();
    last = writer.get(node).data;
    return true;
  };
  relay.hold();
  writer.set(node, avout::to_bytes("1"));
  REQUIRE(relay.keeps(node, scaled(5s)));  // the re-arm went out and waits in the relay
  (void)read_on_news(1000ms);              // old code: called back already, reads "1"
  writer.set(node, avout::to_bytes("2"));  // before the re-arm reaches the server
  relay.release();
  while (read_on_news(scaled(2s))) {
  }
  CHECK(read_for >= 1);
  CHECK(last == avout::to_bytes("2"));
}

TEST_CASE("an expired session is reported and replaced by a new one that works") {
  avout::ZooKeeperSession session(options_for(avout::testing::shared_zookeeper().connect_string()));
  Inbox<avout::SessionState> states;
  session.add_listener([&](avout::SessionState state) { states.push(state); });
  const std::string base = unique_path("expiry");
  session.create_recursive(base);
  const std::string ephemeral = session.create(base + "/mine", {}, avout::CreateMode::ephemeral);
  Inbox<avout::WatchEvent> persistent;
  auto subscription =
      session.watch_persistently(base, [&](const avout::WatchEvent& e) { persistent.push(e); });
  const auto old_id = session.session_id();
  const auto old_generation = session.generation();
  session.expire_for_testing();
  const auto deadline = std::chrono::steady_clock::now() + scaled(20s);
  while (session.generation() == old_generation && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  REQUIRE(session.generation() == old_generation + 1);
  CHECK(session.session_id() != old_id);
  CHECK(states.wait_for_sequence(avout::SessionState::expired, avout::SessionState::connected,
                                 scaled(5s)));
  CHECK_FALSE(session.exists(ephemeral).has_value());
  session.create(base + "/again", {}, avout::CreateMode::ephemeral);
  // The persistent watch was re-armed on the new session.
  const auto before = persistent.items().size();
  session.set(base, avout::to_bytes("changed"));
  CHECK(persistent.wait_for_count(before + 1, scaled(5s)));
}

TEST_CASE("a request made while the expired session is being renewed goes to the new session") {
  avout::ZooKeeperSession session(options_for(avout::testing::shared_zookeeper().connect_string()));
  const std::string base = unique_path("renewing");
  session.create_recursive(base);
  const auto old_generation = session.generation();
  session.expire_for_testing();  // returns once the expiry is seen, the renewal under way
  // Old code: SessionExpired ("invalid zhandle state") from the dead handle.
  CHECK_NOTHROW(session.create(base + "/after", {}, avout::CreateMode::ephemeral));
  CHECK(session.exists(base).has_value());
  CHECK(session.generation() == old_generation + 1);
}

TEST_CASE("a session to a port without a server fails with ConnectionLoss in bounded time") {
  const auto started = std::chrono::steady_clock::now();
  auto options = options_for("127.0.0.1:" + std::to_string(avout::testing::free_port()));
  options.connect_timeout = 1000ms;
  CHECK_THROWS_AS(avout::ZooKeeperSession{options}, avout::ConnectionLoss);
  CHECK(std::chrono::steady_clock::now() - started < scaled(5s));
}

TEST_CASE("a chroot scopes every path, and a missing chroot is NoNode") {
  const std::string hosts = avout::testing::shared_zookeeper().connect_string();
  const std::string root = unique_path("chroot");
  {
    avout::ZooKeeperSession plain(options_for(hosts));
    plain.create_recursive(root);
  }
  auto scoped_options = options_for(hosts);
  scoped_options.chroot = root;
  avout::ZooKeeperSession scoped(scoped_options);
  scoped.create("/inside", {});
  avout::ZooKeeperSession plain(options_for(hosts));
  CHECK(plain.exists(root + "/inside").has_value());
  auto missing = options_for(hosts);
  missing.chroot = root + "/absent";
  CHECK_THROWS_AS(avout::ZooKeeperSession{missing}, avout::NoNode);
}

TEST_CASE(
    "a stopped server gives disconnected and ConnectionLoss; a restart reconnects the same "
    "session") {
  avout::testing::ZooKeeperServer server;
  auto options = options_for(server.connect_string());
  options.session_timeout = 20000ms;
  avout::ZooKeeperSession session(options);
  Inbox<avout::SessionState> states;
  session.add_listener([&](avout::SessionState state) { states.push(state); });
  session.create("/kept", {});
  const auto id = session.session_id();
  server.stop();
  // (A late `connected` of the first connect may come first: look for the disconnect.)
  REQUIRE(states.wait_for_item(avout::SessionState::disconnected, scaled(10s)));
  CHECK_FALSE(session.connected());
  server.start();
  const auto deadline = std::chrono::steady_clock::now() + scaled(30s);
  while (!session.connected() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
  }
  REQUIRE(session.connected());
  CHECK(session.session_id() == id);
  CHECK(session.exists("/kept").has_value());
}

TEST_CASE("digest credentials protect created nodes from sessions without them") {
  const std::string hosts = avout::testing::shared_zookeeper().connect_string();
  auto with_credentials = options_for(hosts);
  with_credentials.digest = "alice:secret";
  avout::ZooKeeperSession alice(with_credentials);
  const std::string node = unique_path("acl");
  alice.create_recursive(node);
  alice.set(node, avout::to_bytes("private"));
  avout::ZooKeeperSession stranger(options_for(hosts));
  CHECK_THROWS_AS(stranger.get(node), avout::NoAuth);
  CHECK_THROWS_AS(stranger.set(node, avout::to_bytes("mine")), avout::NoAuth);
  CHECK(alice.get(node).data == avout::to_bytes("private"));
}

TEST_CASE("paths are validated before they reach ZooKeeper") {
  for (const char* bad :
       {"", "a", "/a/", "//", "/a//b", "/a/../b", "/./x", "/zookeeper/x", "/a\nb"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(avout::validate_path(bad), avout::InvalidName);
  }
  avout::validate_path("/");
  avout::validate_path("/a/b-c_d.e");
  CHECK(avout::join_path("/", "b") == "/b");
  CHECK(avout::join_path("/a", "b") == "/a/b");
}

TEST_CASE("with the ensemble leader killed the client keeps working") {
  avout::testing::ZooKeeperEnsemble ensemble;
  auto options = options_for(ensemble.connect_string());
  options.session_timeout = 10000ms;
  avout::ZooKeeperSession session(options);
  session.create("/before", avout::to_bytes("1"));
  const int leader = ensemble.leader();
  REQUIRE(leader >= 0);
  ensemble.kill(leader);
  ensemble.wait_for_quorum();
  // Calls during the election may fail with ConnectionLoss; the session itself survives.
  std::optional<avout::NodeData> read;
  const auto deadline = std::chrono::steady_clock::now() + scaled(30s);
  while (!read && std::chrono::steady_clock::now() < deadline) {
    try {
      session.create("/after", {});
      read = session.get("/before");
    } catch (const avout::ConnectionLoss&) {
      std::this_thread::sleep_for(200ms);
    } catch (const avout::NodeExists&) {
      read = session.get("/before");
    }
  }
  REQUIRE(read.has_value());
  CHECK(read->data == avout::to_bytes("1"));
  CHECK(ensemble.leader() != leader);
  ensemble.restart(leader);
  CHECK(session.exists("/after").has_value());
}
