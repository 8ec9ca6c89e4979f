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
  avout::Client client(avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
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
