#pragma once
// Fault injection at the store border, for tests only: a Store that decorates any Store and,
// per write drawn from the calling thread's seeded stream, loses the reply of an applied write
// (writes, then throws BackendError, the stores' connection error), fails before writing, or makes
// the whole store unavailable for a while (every call throws BackendError until it is back).

#include <avout/backend.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace avout::testing {

/// Probabilities (0..1) per write (AtomState::compare_and_set, ReferenceData::set).
struct StoreFaultRates {
  double reply_lost = 0;
  double fail_early = 0;
  double outage = 0;
  std::chrono::milliseconds outage_length{300};
};

/// Rates from AVOUT_STORE_FAULTS="lost=0.05,early=0.05,outage=0.01" ("off": none).
StoreFaultRates store_fault_rates_from_env(StoreFaultRates defaults);

/// A Store whose writes fail as `rates` say; reads fail only during an outage.
class FaultyStore : public Store {
 public:
  /// Decorates `inner` (which must outlive this), drawing from the calling thread's stream
  /// of a source seeded with `seed` (support/fault_streams.hpp).
  FaultyStore(Store& inner, std::uint64_t seed, StoreFaultRates rates);
  std::string description() const override;
  StoreIdentity identity() const override { return inner_.identity(); }
  std::size_t max_value_size() const override;
  std::unique_ptr<AtomState> atom_state(const std::string& name) override;
  std::unique_ptr<ReferenceData> reference_data(const std::string& name) override;
  /// Pauses (false) or resumes (true) injection.
  void enable(bool on);

  /// What the next write does.
  enum class Fault { none, reply_lost, fail_early };
  /// Draws the fault of one write of `what` (may start an outage); throws during an outage.
  Fault draw(const std::string& what, bool write);

 private:
  Store& inner_;
  std::mutex mutex_;
  const std::uint64_t seed_;
  StoreFaultRates rates_;
  bool enabled_ = true;
  std::chrono::steady_clock::time_point unavailable_until_{};
};

}  // namespace avout::testing
