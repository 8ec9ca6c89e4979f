// An agent write whose reply is lost while ZooKeeper then stays unreachable throws
// OutcomeUnknown, not the plain ConnectionLoss of a failure that is safe to retry blindly:
// a restart, and the create that makes a new agent.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <stdexcept>
#include <thread>

using namespace std::chrono_literals;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/agent-outcome-test", stem);
}

// Stores values in another store and, once armed, runs a hook right after the next value is
// stored: the point between an agent's value write and its ZooKeeper write.
class TrippingStore : public avout::Store {
 public:
  explicit TrippingStore(avout::Store& inner) : inner_(inner) {}
  void arm(std::function<void()> hook) { hook_ = std::move(hook); }
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

TEST_CASE(
    "an agent restart whose reply is lost while ZooKeeper stays unreachable throws "
    "OutcomeUnknown, and it did land") {
  avout::Client client(options());
  TrippingStore store(client.default_store());
  const std::string name = unique_name("restart");
  auto agent = client.agent<long>(name, 1, store);
  agent.send([](long) -> long { throw std::runtime_error("fail the agent"); });
  agent.await(avout::testing::scaled(10s));
  REQUIRE(agent.error().has_value());

  std::optional<avout::testing::FaultPlan> plan;
  store.arm([&] {
    plan.emplace(1, unresolvable(), avout::testing::shared_zookeeper().connect_string());
  });
  CHECK_THROWS_AS(agent.restart(5), avout::OutcomeUnknown);
  REQUIRE(plan.has_value());
  CHECK(avout::testing::FaultPlan::counts().reply_lost == 1);
  plan.reset();

  CHECK_FALSE(agent.error().has_value());
  CHECK(agent.deref() == 5);
}

TEST_CASE(
    "making an agent whose head create reply is lost while ZooKeeper stays unreachable "
    "throws OutcomeUnknown, and making it again finds it") {
  avout::Client client(options());
  TrippingStore store(client.default_store());
  const std::string name = unique_name("create");
  std::optional<avout::testing::FaultPlan> plan;
  store.arm([&] {
    plan.emplace(1, unresolvable(), avout::testing::shared_zookeeper().connect_string());
  });
  CHECK_THROWS_AS(client.agent<long>(name, 7, store), avout::OutcomeUnknown);
  REQUIRE(plan.has_value());
  CHECK(avout::testing::FaultPlan::counts().reply_lost == 1);
  plan.reset();

  auto agent = client.agent<long>(name, 9, store);
  CHECK(agent.deref() == 7);  // the lost create had landed
}

namespace {

// The 16 hex digits a point written in `session` starts with (rule 2: points name their writer).
std::string session_prefix(std::int64_t session) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(session));
  return text;
}

// Ends the client's session and waits until its renewal is in place: the moment between an
// agent's value write and its commit multi where a renewal must not be crossed (rule 2).
void renew_session(avout::Client& client) {
  const auto before = client.session().generation();
  client.session().expire_for_testing();
  const auto deadline = std::chrono::steady_clock::now() + avout::testing::scaled(20s);
  while ((client.session().generation() == before || !client.session().connected()) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(client.session().generation() != before);
}

}  // namespace

TEST_CASE(
    "an agent restart whose session is renewed between its value write and its commit "
    "commits a value written in the new session") {
  avout::Client client(options());
  TrippingStore store(client.default_store());
  const std::string name = unique_name("restart-renewed");
  auto agent = client.agent<long>(name, 1, store);
  agent.send([](long) -> long { throw std::runtime_error("fail the agent"); });
  agent.await(avout::testing::scaled(10s));
  REQUIRE(agent.error().has_value());

  store.arm([&] { renew_session(client); });
  agent.restart(5);
  CHECK(agent.deref() == 5);
  const auto head = avout::inspect::agent_head(client, name);
  REQUIRE(head.has_value());
  // gc erases a dead session's unreferenced points: a head may name only a live writer's.
  CHECK(head->point.id.substr(0, 16) == session_prefix(client.session().session_id()));
}

TEST_CASE(
    "an agent batch whose session is renewed between its value write and its commit "
    "stores nothing of the dead session") {
  avout::Client client(options());
  TrippingStore store(client.default_store());
  const std::string name = unique_name("batch-renewed");
  auto agent = client.agent<long>(name, 1, store);
  store.arm([&] { renew_session(client); });
  agent.send([](long v) { return v + 1; });
  // The send's node went with the old session: dropped, and nothing it wrote is named.
  CHECK_THROWS_AS(agent.await(avout::testing::scaled(10s)), avout::SessionExpired);
  CHECK(agent.deref() == 1);
  agent.send([](long v) { return v + 10; });
  CHECK(agent.await_for(avout::testing::scaled(10s)));
  CHECK(agent.deref() == 11);
  const auto head = avout::inspect::agent_head(client, name);
  REQUIRE(head.has_value());
  CHECK(head->point.id.substr(0, 16) == session_prefix(client.session().session_id()));
}
