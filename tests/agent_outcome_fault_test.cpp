// An agent write whose reply is lost while ZooKeeper then stays unreachable throws
// OutcomeUnknown, not the plain ConnectionLoss of a failure that is safe to retry blindly:
// a restart, and the create that makes a new agent.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <optional>
#include <random>
#include <stdexcept>

using namespace std::chrono_literals;

namespace {

std::string unique_name(const std::string& stem) {
  static std::mt19937_64 random{std::random_device{}()};
  return "/agent-outcome-test/" + stem + "-" + std::to_string(random() % 1000000000);
}

// Stores values in another store and, once armed, runs a hook right after the next value is
// stored: the point between an agent's value write and its ZooKeeper write.
class TrippingStore : public avout::Store {
 public:
  explicit TrippingStore(avout::Store& inner) : inner_(inner) {}
  void arm(std::function<void()> hook) { hook_ = std::move(hook); }
  std::string description() const override { return "tripping " + inner_.description(); }
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
      inner_->set(std::move(value), point);
      if (auto hook = std::exchange(store_.hook_, {})) hook();
    }
    avout::Bytes get(const avout::Point& point) override { return inner_->get(point); }
    void erase(const avout::Point& point) override { inner_->erase(point); }
    std::vector<avout::Point> points() override { return inner_->points(); }

   private:
    TrippingStore& store_;
    std::unique_ptr<avout::ReferenceData> inner_;
  };

  avout::Store& inner_;
  std::function<void()> hook_;
};

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 2000ms};
}

// From now on the server applies writes but their replies are lost, and every read fails
// before it is sent: a write whose outcome cannot be found out.
avout::testing::ZooKeeperFaultRates unresolvable() {
  return {.reply_lost = 1.0, .fail_early = 1.0};
}

}  // namespace

TEST_CASE("an agent restart whose reply is lost while ZooKeeper stays unreachable throws "
          "OutcomeUnknown, and it did land") {
  avout::Client client(options());
  TrippingStore store(client.default_store());
  const std::string name = unique_name("restart");
  auto agent = client.agent<long>(name, 1, store);
  agent.send([](long) -> long { throw std::runtime_error("fail the agent"); });
  agent.await(avout::testing::scaled(10s));
  REQUIRE(agent.error().has_value());

  std::optional<avout::testing::FaultPlan> plan;
  store.arm([&] { plan.emplace(1, unresolvable(), avout::testing::shared_zookeeper().connect_string()); });
  CHECK_THROWS_AS(agent.restart(5), avout::OutcomeUnknown);
  REQUIRE(plan.has_value());
  CHECK(avout::testing::FaultPlan::counts().reply_lost == 1);
  plan.reset();

  CHECK_FALSE(agent.error().has_value());
  CHECK(agent.deref() == 5);
}

TEST_CASE("making an agent whose head create reply is lost while ZooKeeper stays unreachable "
          "throws OutcomeUnknown, and making it again finds it") {
  avout::Client client(options());
  TrippingStore store(client.default_store());
  const std::string name = unique_name("create");
  std::optional<avout::testing::FaultPlan> plan;
  store.arm([&] { plan.emplace(1, unresolvable(), avout::testing::shared_zookeeper().connect_string()); });
  CHECK_THROWS_AS(client.agent<long>(name, 7, store), avout::OutcomeUnknown);
  REQUIRE(plan.has_value());
  CHECK(avout::testing::FaultPlan::counts().reply_lost == 1);
  plan.reset();

  auto agent = client.agent<long>(name, 9, store);
  CHECK(agent.deref() == 7);  // the lost create had landed
}
