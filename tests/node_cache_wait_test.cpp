// NodeCache::wait_moved against a real ZooKeeper: it ends when another session's write fires
// the watch of the slot a lookup finished at, and when the deadline's stop is requested; an
// expired deadline does not wait. And NodeCache::prefetch's tally: a head read ahead counts
// as used by the next lookup of it, as wasted when a watch event drops it first. And V6's
// read ahead on a watch event: only while a lookup finish_newest() returned lives; and none
// of a head a sibling thread's commit kept newer than the one read.
#include "runtime/node_cache.hpp"
#include "base/callback_executor.hpp"
#include "runtime/prefetch_tally.hpp"

#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

avout::SessionOptions session_options() {
  return avout::SessionOptions{.hosts = avout::testing::shared_zookeeper().connect_string()};
}

// A session, a node at a unique path, and a cache whose (watched) lookup of it has finished.
struct Cached {
  explicit Cached(const std::string& stem)
      : path(avout::testing::unique_name("/node-cache-wait-test", stem)) {
    session.create_recursive(path);
    lookup = cache.begin(path);
    (void)cache.finish(lookup);
  }
  avout::ZooKeeperSession session{session_options()};
  std::string path;
  avout::detail::NodeCache cache{session};
  avout::detail::NodeCache::Lookup lookup;
};

}  // namespace

TEST_CASE("wait_moved ends when another session's write fires the slot's watch") {
  avout::testing::start_shared_servers();
  Cached cached("watched");
  auto& cache = cached.cache;
  auto& lookup = cached.lookup;
  avout::ZooKeeperSession writer(session_options());
  REQUIRE(lookup.watched);
  CHECK_FALSE(cache.wait_moved(lookup, avout::Deadline::after(0ms)));  // nothing moved yet

  std::thread write([&] {
    std::this_thread::sleep_for(20ms);
    writer.set(cached.path, avout::to_bytes("changed"));
  });
  CHECK(cache.wait_moved(lookup, avout::Deadline::after(scaled(30s))));
  write.join();
  CHECK(cache.changed_since(lookup));
  CHECK(cache.wait_moved(lookup, avout::Deadline::after(0ms)));  // moved stays moved
}

TEST_CASE("wait_moved ends, false, when its deadline's stop is requested") {
  avout::testing::start_shared_servers();
  Cached cached("cancelled");
  std::stop_source stop;
  std::thread cancel([&] {
    std::this_thread::sleep_for(20ms);
    stop.request_stop();
  });
  CHECK_FALSE(cached.cache.wait_moved(cached.lookup, avout::Deadline(stop.get_token())));
  cancel.join();
}

TEST_CASE("a head read ahead counts as used by the next lookup, as wasted when dropped first") {
  avout::testing::start_shared_servers();
  Cached cached("prefetch");
  auto& cache = cached.cache;
  avout::ZooKeeperSession writer(session_options());
  const auto before = avout::detail::prefetch_tally();

  cache.prefetch(cached.path);
  auto used = cache.begin(cached.path);
  (void)cache.finish(used);
  auto second = cache.begin(cached.path);  // a second lookup: nothing more to count
  (void)cache.finish(second);
  auto tally = avout::detail::prefetch_tally();
  CHECK(tally.made == before.made + 1);
  CHECK(tally.used == before.used + 1);
  CHECK(tally.wasted == before.wasted);

  cache.prefetch(cached.path);
  writer.set(cached.path, avout::to_bytes("changed"));
  REQUIRE(cache.wait_moved(used, avout::Deadline::after(scaled(30s))));
  tally = avout::detail::prefetch_tally();
  CHECK(tally.made == before.made + 2);
  CHECK(tally.used == before.used + 1);
  CHECK(tally.wasted == before.wasted + 1);
}

TEST_CASE("a watch event on a head a live lookup read reads it ahead, and only then") {
  avout::testing::start_shared_servers();
  auto callbacks = std::make_shared<avout::detail::CallbackExecutor>();
  avout::ZooKeeperSession session(session_options());
  const std::string path = avout::testing::unique_name("/node-cache-wait-test", "event");
  session.create_recursive(path);
  avout::detail::NodeCache cache(session, callbacks);
  avout::ZooKeeperSession writer(session_options());

  std::optional<avout::detail::NodeCache::Lookup> reading(cache.begin(path));
  (void)cache.finish_newest(*reading);
  REQUIRE(reading->watched);
  const auto before = avout::detail::prefetch_tally();
  writer.set(path, avout::to_bytes("changed"));
  // Read ahead on the callback thread: wait for it, bounded.
  const auto give_up = std::chrono::steady_clock::now() + scaled(30s);
  while (avout::detail::prefetch_tally().made == before.made &&
         std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(5ms);
  auto next = cache.begin(path);  // served from the read ahead
  CHECK(cache.finish(next).data == avout::to_bytes("changed"));
  auto tally = avout::detail::prefetch_tally();
  CHECK(tally.made == before.made + 1);
  CHECK(tally.used == before.used + 1);
  CHECK(tally.wasted == before.wasted);

  reading.reset();  // the attempt ended: an event on the head costs nothing more
  writer.set(path, avout::to_bytes("again"));
  REQUIRE(cache.wait_moved(next, avout::Deadline::after(scaled(30s))));  // the event came
  std::promise<void> drained;  // and whatever it posted has run once this has
  callbacks->post([&] { drained.set_value(); });
  drained.get_future().wait();
  tally = avout::detail::prefetch_tally();
  CHECK(tally.made == before.made + 1);
  CHECK(tally.used == before.used + 1);
}

TEST_CASE("a head a sibling thread's commit kept newer is not read ahead again") {
  avout::testing::start_shared_servers();
  avout::ZooKeeperSession session(session_options());
  const std::string path = avout::testing::unique_name("/node-cache-wait-test", "kept-newer");
  session.create_recursive(path);
  avout::detail::NodeCache cache(session);
  // Two commits of this client in a row (the clock's version one apart), each keeping the
  // node it wrote: an attempt read the first, a sibling thread's commit kept the second.
  const auto first = session.set(path, avout::to_bytes("one"));
  cache.keep_unwatched({{path, {avout::to_bytes("one"), first}}}, first.mzxid, 10);
  const auto second = session.set(path, avout::to_bytes("two"));
  cache.keep_unwatched({{path, {avout::to_bytes("two"), second}}}, second.mzxid, 11);

  const auto before = avout::detail::prefetch_tally();
  cache.prefetch(path, first.mzxid);  // the slot holds the newer node: nothing to read
  CHECK(avout::detail::prefetch_tally().made == before.made);
  auto next = cache.begin(path);
  CHECK(cache.finish_newest(next).data == avout::to_bytes("two"));
  CHECK(next.kept());

  // The attempt read the newest kept node and still failed: another client wrote since.
  session.set(path, avout::to_bytes("three"));
  cache.prefetch(path, second.mzxid);
  CHECK(avout::detail::prefetch_tally().made == before.made + 1);
  auto again = cache.begin(path);
  CHECK(cache.finish_newest(again).data == avout::to_bytes("three"));
  CHECK(again.watched);
}
