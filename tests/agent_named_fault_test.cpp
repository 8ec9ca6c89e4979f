// Named agent actions under a lost reply: the batch multi that runs two clients' named
// actions lands but its reply is lost; its outcome is read back and each action runs once.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <optional>
#include <thread>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/agent-named-fault-test", stem);
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 2000ms};
}

using Log = std::vector<long>;

// Stores values in another store and runs a hook once, right after it stores a log of
// `size` entries: the point between a batch's value write and its multi.
class TrippingStore : public avout::Store {
 public:
  TrippingStore(avout::Store& inner, std::size_t size, std::function<void()> hook)
      : inner_(inner), size_(size), hook_(std::move(hook)) {}
  std::string description() const override { return "tripping " + inner_.description(); }
  avout::StoreIdentity identity() const override { return inner_.identity(); }
  std::size_t max_value_size() const override { return inner_.max_value_size(); }
  std::unique_ptr<avout::AtomState> atom_state(const std::string& name) override {
    return inner_.atom_state(name);
  }
  std::unique_ptr<avout::ReferenceData> reference_data(const std::string& name) override {
    return std::make_unique<Data>(*this, inner_.reference_data(name));
  }

 private:
  class Data : public avout::ReferenceData {
   public:
    Data(TrippingStore& store, std::unique_ptr<avout::ReferenceData> inner)
        : store_(store), inner_(std::move(inner)) {}
    std::string name() const override { return inner_->name(); }
    void set(avout::Bytes value, const avout::Point& point) override {
      const bool full = avout::decode<Log>(value).size() == store_.size_;
      inner_->set(std::move(value), point);
      if (full && !store_.tripped_.exchange(true)) store_.hook_();
    }
    avout::Bytes get(const avout::Point& point) override { return inner_->get(point); }
    void erase(const avout::Point& point) override { inner_->erase(point); }
    std::vector<avout::Point> points() override { return inner_->points(); }

   private:
    TrippingStore& store_;
    std::unique_ptr<avout::ReferenceData> inner_;
  };

  avout::Store& inner_;
  std::size_t size_;
  std::function<void()> hook_;
  std::atomic<bool> tripped_{false};
};

}  // namespace

TEST_CASE(
    "a batch of two clients' named actions whose multi reply is lost runs each action "
    "exactly once, in each sender's order") {
  constexpr long per_client = 5;
  avout::Client a(options());
  avout::Client b(options());
  std::optional<avout::testing::FaultPlan> plan;
  std::atomic<bool> planned{false};
  // From the last batch's value write on, ZooKeeper applies writes but loses their replies
  // (the batch multi's first), until the test has seen one lost.
  TrippingStore store(a.default_store(), 1 + 2 * per_client, [&] {
    plan.emplace(7, avout::testing::ZooKeeperFaultRates{.reply_lost = 1.0},
                 avout::testing::shared_zookeeper().connect_string());
    planned = true;
  });
  const std::string name = unique_name("lost-batch");
  auto first = a.agent<Log>(name, {}, store);
  auto second = b.agent<Log>(name, {}, store);
  for (auto* agent : {&first, &second}) {
    agent->define("append", [](Log log, long item) {
      log.push_back(item);
      return log;
    });
  }
  std::atomic<bool> release{false};
  first.send([&release](Log log) {
    while (!release) std::this_thread::sleep_for(5ms);  // the sends below queue behind it
    log.push_back(0);
    return log;
  });
  for (long i = 1; i <= per_client; ++i) {
    first.send("append", i);
    second.send("append", 100 + i);
  }
  release = true;
  const auto deadline = std::chrono::steady_clock::now() + scaled(30s);
  while (!(planned && avout::testing::FaultPlan::counts().reply_lost >= 1) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  REQUIRE(planned);
  CHECK(avout::testing::FaultPlan::counts().reply_lost >= 1);
  plan.reset();
  REQUIRE(first.await_for(scaled(30s)));
  REQUIRE(second.await_for(scaled(30s)));

  CHECK_FALSE(first.error());
  const Log log = second.deref();
  REQUIRE(log.size() == 1 + 2 * per_client);
  std::map<long, std::size_t> position;
  for (std::size_t i = 0; i < log.size(); ++i) position[log[i]] = i;
  CHECK(position.size() == log.size());  // each action ran exactly once
  for (long i = 2; i <= per_client; ++i) {
    CHECK(position.at(i - 1) < position.at(i));
    CHECK(position.at(100 + i - 1) < position.at(100 + i));
  }
}
