#pragma once
// A Store that times the calls the core makes on another store: how many writes, reads
// (values fetched on a cache miss) and erases a workload costs, and how long they take. A
// bench-only tally: the library keeps no timers of its own.

#include <avout/backend.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace avout::bench {

/// Calls and nanoseconds per kind of store call.
struct StoreTally {
  std::atomic<std::uint64_t> writes{0};       ///< values created (set or one of set_values)
  std::atomic<std::uint64_t> write_calls{0};  ///< set or set_values calls (round trips)
  std::atomic<std::uint64_t> write_ns{0};
  std::atomic<std::uint64_t> reads{0};  ///< values fetched (get or one of get_values)
  std::atomic<std::uint64_t> read_ns{0};
  std::atomic<std::uint64_t> erases{0};       ///< values removed (erase or one of erase_values)
  std::atomic<std::uint64_t> erase_calls{0};  ///< erase or erase_values calls (round trips)
  std::atomic<std::uint64_t> erase_ns{0};

  /// Zero again, every counter (a workload counts from here on).
  void reset() {
    for (auto* counter :
         {&writes, &write_calls, &write_ns, &reads, &read_ns, &erases, &erase_calls, &erase_ns}) {
      *counter = 0;
    }
  }
};

/// Forwards every call to `inner`, counting and timing them into `tally`.
class TimingStore final : public Store {
 public:
  /// `inner` and `tally` outlive this store.
  TimingStore(Store& inner, StoreTally& tally) : inner_(inner), tally_(tally) {}
  std::string description() const override { return inner_.description(); }
  avout::StoreIdentity identity() const override { return inner_.identity(); }
  std::size_t max_value_size() const override { return inner_.max_value_size(); }
  std::unique_ptr<AtomState> atom_state(const std::string& name) override {
    return inner_.atom_state(name);
  }
  std::unique_ptr<ReferenceData> reference_data(const std::string& name) override;
  void set_values(std::span<const PointValue> values) override;
  void erase_values(std::span<const PointErasure> erasures) override;
  std::vector<std::optional<Bytes>> get_values(std::span<const PointRead> reads) override;

 private:
  Store& inner_;
  StoreTally& tally_;
};

}  // namespace avout::bench
