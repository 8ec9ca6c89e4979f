// The slow half of transaction_safety_test: the same promises where a second ZooKeeper
// server, an expired session or several processes are needed to break them.
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"  // unique_name

#include <doctest/doctest.h>

#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

long plus(long value, long delta) { return value + delta; }

avout::ClientOptions options_for(const std::string& hosts) {
  return avout::ClientOptions{.hosts = hosts, .session_timeout = 4000ms};
}

avout::ClientOptions options() {
  return options_for(avout::testing::shared_zookeeper().connect_string());
}

// A user's own store that answers reads slowly, so other processes commit (and trim the value
// being read) in between: what a loaded machine or a slow store does now and then.
class SlowReads final : public avout::Store {
 public:
  explicit SlowReads(avout::Store& inner) : inner_(inner) {}
  std::string description() const override { return "slow " + inner_.description(); }
  std::size_t max_value_size() const override { return inner_.max_value_size(); }
  std::unique_ptr<avout::AtomState> atom_state(const std::string& name) override {
    return inner_.atom_state(name);
  }
  std::unique_ptr<avout::ReferenceData> reference_data(const std::string& name) override {
    return std::make_unique<Data>(inner_.reference_data(name));
  }

 private:
  struct Data final : avout::ReferenceData {
    explicit Data(std::unique_ptr<avout::ReferenceData> wrapped) : inner(std::move(wrapped)) {}
    std::string name() const override { return inner->name(); }
    void set(avout::Bytes value, const avout::Point& point) override { inner->set(std::move(value), point); }
    avout::Bytes get(const avout::Point& point) override {
      std::this_thread::sleep_for(5ms);
      return inner->get(point);
    }
    void erase(const avout::Point& point) override { inner->erase(point); }
    std::vector<avout::Point> points() override { return inner->points(); }
    std::unique_ptr<avout::ReferenceData> inner;
  };
  avout::Store& inner_;
};

}  // namespace

TEST_CASE("reads from a follower inside and outside dosync never fail while another process trims what they read") {
  avout::testing::ZooKeeperEnsemble ensemble;
  (void)avout::testing::shared_redis();
  const int leader = ensemble.leader();
  REQUIRE(leader >= 0);
  const int follower = (leader + 1) % 3;
  const auto member = [&](int index) { return "127.0.0.1:" + std::to_string(ensemble.port(index)); };
  const std::string name = avout::testing::unique_name("/stm-safety", "follower-trimmed");
  constexpr long commits = 100;
  avout::testing::StartSignal go;
  // The writer commits through the leader; the reader's follower may lag behind it.
  avout::testing::ChildProcess writer(0, [&](int) {
    go.wait();
    avout::Client client(options_for(member(leader)));
    avout::redis::Store redis(avout::testing::shared_redis().url());
    auto ref = client.ref<long>(name, 0, redis);
    for (long i = 0; i < commits; ++i) client.dosync([&] { ref.alter(plus, 1); });
  });
  avout::Client client(options_for(member(follower)));  // min_history 0: every commit trims
  avout::redis::Store redis(avout::testing::shared_redis().url());
  SlowReads slow(redis);
  auto ref = client.ref<long>(name, 0, slow);
  go.release();
  long last = 0;
  int errors = 0;
  int went_back = 0;
  const auto deadline = std::chrono::steady_clock::now() + scaled(60s);
  while (last < commits && std::chrono::steady_clock::now() < deadline) {
    try {
      const long outside = ref.deref();
      const long inside = client.dosync([&] { return ref.deref(); });
      if (outside < last || inside < outside) ++went_back;
      last = inside;
    } catch (const avout::Error& error) {
      MESSAGE(std::string(error.what()));
      ++errors;
      if (errors > 20) break;
    }
  }
  CHECK(writer.wait(scaled(60s)) == 0);
  CHECK(last == commits);
  CHECK(errors == 0);
  CHECK(went_back == 0);
}

TEST_CASE("a commit whose session was renewed while storing values starts the attempt again") {
  (void)avout::testing::shared_redis();
  avout::Client client(options());
  avout::Client sweeper(options());
  avout::redis::Store redis(avout::testing::shared_redis().url());
  const std::string prefix = avout::testing::unique_name("/stm-safety", "renewed");
  auto a = client.ref<long>(prefix + "/a", 0, redis);
  auto b = client.ref<long>(prefix + "/b", 0, redis);
  client.dosync([&] {  // heads and tags are cached from here on: no read fails on expiry
    a.alter(plus, 1);
    b.alter(plus, 1);
  });
  bool armed = false;
  int validated = 0;
  // The second value validated finds the first already stored under the old session; the
  // session expires and another process's gc sweeps what that session left.
  auto expire_midway = [&](const long&) {
    if (armed && ++validated == 2) {
      armed = false;
      client.session().expire_for_testing();
      (void)sweeper.gc({redis});
    }
    return true;
  };
  a.set_validator(expire_midway);
  b.set_validator(expire_midway);
  client.dosync([&] {
    armed = validated == 0;
    a.alter(plus, 1);
    b.alter(plus, 1);
  });
  avout::Client reader(options());  // fresh: the writer's cache would hide an erased value
  CHECK(reader.ref<long>(prefix + "/a", 0, redis).deref() == 2);
  CHECK(reader.ref<long>(prefix + "/b", 0, redis).deref() == 2);
}
