#pragma once
// The "reads survive trimming" scenario: another process commits to a ref while this one
// derefs it through a store that reads slowly, inside and outside dosync.

#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "processes.hpp"
#include "servers.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

namespace avout::testing {

/// A user's own store that answers reads slowly, so other processes commit (and trim the value
/// being read) in between: what a loaded machine or a slow store does now and then.
class SlowReads final : public avout::Store {
 public:
  /// Reads of `inner` (which must outlive this store) each take 5 ms longer.
  explicit SlowReads(avout::Store& inner) : inner_(inner) {}
  std::string description() const override { return "slow " + inner_.description(); }
  avout::StoreIdentity identity() const override { return inner_.identity(); }
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
    void set(avout::Bytes value, const avout::Point& point) override {
      inner->set(std::move(value), point);
    }
    avout::Bytes get(const avout::Point& point) override {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return inner->get(point);
    }
    void erase(const avout::Point& point) override { inner->erase(point); }
    std::vector<avout::Point> points() override { return inner->points(); }
    std::unique_ptr<avout::ReferenceData> inner;
  };
  avout::Store& inner_;
};

/// A process (`writer` options) commits +1 to the Redis ref `name` a hundred times while this
/// one (`reader` options, no kept history: every commit trims) derefs it until it sees the
/// last: no read may fail and none may be older than one before it.
inline void check_reads_survive_trimming(const avout::ClientOptions& writer_options,
                                         const avout::ClientOptions& reader_options,
                                         const std::string& name) {
  constexpr long commits = 100;
  StartSignal go;
  ChildProcess writer(0, [&](int) {
    go.wait();
    avout::Client client(writer_options);
    avout::redis::Store redis(shared_redis().url());
    auto ref = client.ref<long>(name, 0, redis);
    for (long i = 0; i < commits; ++i) {
      client.dosync([&] { ref.alter([](long value) { return value + 1; }); });
    }
  });
  avout::Client client(reader_options);
  avout::redis::Store redis(shared_redis().url());
  SlowReads slow(redis);
  auto ref = client.ref<long>(name, 0, slow);
  go.release();
  long last = 0;
  int errors = 0;
  int went_back = 0;
  const auto deadline = std::chrono::steady_clock::now() + scaled(std::chrono::seconds(60));
  while (last < commits && std::chrono::steady_clock::now() < deadline) {
    try {
      const long outside = ref.deref();
      const long inside = client.dosync([&] { return ref.deref(); });
      if (outside < last || inside < outside) ++went_back;
      last = inside;
    } catch (const avout::Error& error) {
      MESSAGE(std::string(error.what()));
      if (++errors > 20) break;
    }
  }
  CHECK(writer.wait(scaled(std::chrono::seconds(60))) == 0);
  CHECK(last == commits);
  CHECK(errors == 0);
  CHECK(went_back == 0);
}

}  // namespace avout::testing
