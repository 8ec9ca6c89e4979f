// Client::gc sweeps each store once, however often the caller names it (the default store
// included): a sweep is a round of requests per ref, so a duplicate costs a full second pass.
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <atomic>

using namespace std::chrono_literals;

namespace {

// Counts the version sets gc asks a store for: one per ref per sweep of that store.
class CountingStore final : public avout::Store {
 public:
  explicit CountingStore(avout::Store& inner) : inner_(inner) {}
  std::string description() const override { return inner_.description(); }
  avout::StoreIdentity identity() const override { return inner_.identity(); }
  std::size_t max_value_size() const override { return inner_.max_value_size(); }
  std::unique_ptr<avout::AtomState> atom_state(const std::string& name) override {
    return inner_.atom_state(name);
  }
  std::unique_ptr<avout::ReferenceData> reference_data(const std::string& name) override {
    ++asked;
    return inner_.reference_data(name);
  }
  /// reference_data calls so far.
  std::atomic<int> asked{0};

 private:
  avout::Store& inner_;
};

}  // namespace

TEST_CASE("gc sweeps a store named twice, or the default store named again, once") {
  avout::testing::start_shared_servers();
  avout::Client client(
      avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                           .session_timeout = 4000ms,
                           .root = avout::testing::unique_name("/gc-once", "root")});
  avout::redis::Store redis(avout::testing::shared_redis().url());
  CountingStore counting(redis);
  auto a = client.ref<long>("/a", 1, counting);
  auto b = client.ref<long>("/b", 2, counting);
  auto c = client.ref<long>("/c", 3, client.default_store());
  counting.asked = 0;

  const auto report = client.gc({counting, counting, client.default_store()});
  CHECK(report.refs_scanned == 3);
  CHECK(counting.asked.load() == 3);
  CHECK(a.deref() + b.deref() + c.deref() == 6);
}

TEST_CASE(
    "a chroot written in the hosts is the deployment's chroot: gc of one deployment keeps "
    "another's values") {
  avout::testing::start_shared_servers();
  const std::string hosts = avout::testing::shared_zookeeper().connect_string();
  const std::string chroot = avout::testing::unique_name("/gc-chroot", "c");
  const std::string root = avout::testing::unique_name("/gc-chroot", "root");
  avout::redis::Store redis(avout::testing::shared_redis().url());
  avout::Client plain(
      avout::ClientOptions{.hosts = hosts, .session_timeout = 4000ms, .root = root});
  plain.session().create_recursive(chroot);
  avout::Client chrooted(
      avout::ClientOptions{.hosts = hosts + chroot, .session_timeout = 4000ms, .root = root});
  CHECK(chrooted.options().hosts == hosts);
  CHECK(chrooted.options().chroot == chroot);
  auto mine = plain.ref<long>("/x", 1, redis);
  auto theirs = chrooted.ref<long>("/x", 2, redis);
  plain.dosync([&] { mine.alter([](long v) { return v + 10; }); });
  chrooted.dosync([&] { theirs.alter([](long v) { return v + 20; }); });
  (void)chrooted.gc({redis});
  (void)plain.gc({redis});
  CHECK(mine.deref() == 11);
  CHECK(theirs.deref() == 22);
  avout::Client fresh(
      avout::ClientOptions{.hosts = hosts, .session_timeout = 4000ms, .root = root});
  CHECK(fresh.ref<long>("/x", 0, redis).deref() == 11);

  auto twice = avout::ClientOptions{.hosts = hosts + chroot, .root = root};
  twice.chroot = chroot + "/other";
  CHECK_THROWS_AS(avout::Client{twice}, avout::InvalidName);
  twice.chroot = chroot;  // the same one twice is one chroot
  CHECK(avout::Client{twice}.options().chroot == chroot);
}

TEST_CASE("the chroot \"/\" is no chroot: the same nodes and the same store keys") {
  avout::testing::start_shared_servers();
  const std::string hosts = avout::testing::shared_zookeeper().connect_string();
  const std::string root = avout::testing::unique_name("/gc-slash", "root");
  avout::redis::Store redis(avout::testing::shared_redis().url());
  avout::Client plain(
      avout::ClientOptions{.hosts = hosts, .session_timeout = 4000ms, .root = root});
  auto options = avout::ClientOptions{.hosts = hosts, .session_timeout = 4000ms, .root = root};
  options.chroot = "/";
  avout::Client slash(options);
  CHECK(slash.options().chroot.empty());
  auto ref = plain.ref<long>("/y", 7, redis);
  auto atom = plain.atom<long>("/z", 8, redis);
  CHECK(slash.ref<long>("/y", 0, redis).deref() == 7);
  CHECK(slash.atom<long>("/z", 0, redis).deref() == 8);
  (void)slash.gc({redis});
  CHECK(ref.deref() == 7);
}
