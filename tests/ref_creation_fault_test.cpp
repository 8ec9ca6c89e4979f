// Creating a ref is a commit: when the reply of its multi is lost after ZooKeeper applied it,
// the creator must judge it landed even though another process has already committed to the
// ref, and keep the value it created (it is now history another reader may still need).
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"  // unique_name
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

avout::ClientOptions options() {
  // Two older values kept: the creator's initial value stays readable after one commit.
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 4000ms,
                              .min_history = 2};
}

// A store whose first write of a value waits until the test lets it go: the ref's creation
// then sends its multi exactly when the test has set up the faults for it.
class GatedStore final : public avout::Store {
 public:
  explicit GatedStore(avout::Store& inner) : inner_(inner) {}
  std::string description() const override { return "gated " + inner_.description(); }
  avout::StoreIdentity identity() const override { return inner_.identity(); }
  std::size_t max_value_size() const override { return inner_.max_value_size(); }
  std::unique_ptr<avout::AtomState> atom_state(const std::string& name) override {
    return inner_.atom_state(name);
  }
  std::unique_ptr<avout::ReferenceData> reference_data(const std::string& name) override {
    return std::make_unique<Data>(inner_.reference_data(name), *this);
  }
  /// Blocks until a write is waiting at the gate.
  void await_writer() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return waiting_; });
  }
  /// Lets the waiting write (and every later one) through.
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  struct Data final : avout::ReferenceData {
    Data(std::unique_ptr<avout::ReferenceData> wrapped, GatedStore& gate)
        : inner(std::move(wrapped)), gate(gate) {}
    std::string name() const override { return inner->name(); }
    void set(avout::Bytes value, const avout::Point& point) override {
      inner->set(std::move(value), point);
      std::unique_lock lock(gate.mutex_);
      gate.waiting_ = true;
      gate.changed_.notify_all();
      gate.changed_.wait(lock, [&] { return gate.open_; });
    }
    avout::Bytes get(const avout::Point& point) override { return inner->get(point); }
    void erase(const avout::Point& point) override { inner->erase(point); }
    std::vector<avout::Point> points() override { return inner->points(); }
    std::unique_ptr<avout::ReferenceData> inner;
    GatedStore& gate;
  };
  avout::Store& inner_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool waiting_ = false;
  bool open_ = false;
};

}  // namespace

TEST_CASE(
    "a ref created with a lost reply keeps its value when another process commits to it before the "
    "creator resolves") {
  // Started before the fork, so the other process only connects.
  (void)avout::testing::shared_zookeeper();
  (void)avout::testing::shared_redis();
  const std::string name = avout::testing::unique_name("/ref-creation", "lost-reply");
  // The other process commits as soon as the head exists: before the creator, whose reads
  // all fail meanwhile, can look at the marker.
  avout::testing::ChildProcess other(0, [&](int) {
    avout::Client client(options());
    avout::redis::Store redis(avout::testing::shared_redis().url());
    const std::string head = avout::inspect::ref_head_path(client, name);
    const auto deadline = std::chrono::steady_clock::now() + scaled(20s);
    for (;;) {
      const auto stat = client.session().exists(head);
      if (stat && stat->data_length > 0) break;
      if (std::chrono::steady_clock::now() > deadline) throw avout::Timeout("no head " + head);
      std::this_thread::sleep_for(2ms);
    }
    auto ref = client.ref<long>(name, -1, redis);
    client.dosync([&] { ref.alter([](long value) { return value + 1; }); });
  });

  avout::Client client(options());
  avout::redis::Store redis(avout::testing::shared_redis().url());
  GatedStore gated(redis);
  std::string error;
  std::optional<avout::Ref<long>> created;
  std::thread creator([&] {
    try {
      created.emplace(client.ref<long>(name, 7, gated));
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  gated.await_writer();
  {
    // From here on this process's next mutation is the creating multi: ZooKeeper applies it
    // and the creator hears connection loss; its resolving reads fail until the other
    // process has committed.
    avout::testing::FaultPlan plan(12, {.reply_lost = 1.0, .fail_early = 1.0},
                                   avout::testing::shared_zookeeper().connect_string());
    gated.open();
    CHECK(other.wait(scaled(30s)) == 0);
    CHECK(avout::testing::FaultPlan::counts().reply_lost >= 1);
  }
  creator.join();
  CHECK(error == "");
  REQUIRE(created.has_value());
  CHECK(created->deref() == 8);

  // Exactly the two values, the created one and the other process's, and both still stored.
  const auto record = avout::inspect::ref_head(client, name);
  REQUIRE(record.has_value());
  REQUIRE(record->history.size() == 1);
  auto data = redis.reference_data(client.ref_value_key(name));
  CHECK(avout::decode<long>(data->get(record->history.front().point)) == 7);
  CHECK(avout::decode<long>(data->get(record->newest)) == 8);
  std::set<std::string> stored;
  for (const auto& point : data->points()) stored.insert(point.id);
  CHECK(stored == std::set<std::string>{record->history.front().point.id, record->newest.id});
}
