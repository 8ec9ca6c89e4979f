#include "support/faulty_store.hpp"

#include "support/fault_rates_env.hpp"
#include "support/fault_streams.hpp"

// The core's private capability of ZooKeeper-held values (core/src), forwarded below.
#include "runtime/zookeeper_held_values.hpp"

namespace avout::testing {
namespace {

class FaultyAtomState : public AtomState {
 public:
  FaultyAtomState(FaultyStore& store, std::unique_ptr<AtomState> inner, std::string name)
      : store_(store), inner_(std::move(inner)), name_(std::move(name)) {}
  Versioned get() override {
    store_.draw(name_, false);
    return inner_->get();
  }
  bool compare_and_set(const Versioned& expected, Bytes next) override {
    const auto fault = store_.draw(name_, true);
    if (fault == FaultyStore::Fault::fail_early) {
      throw BackendError("faulty store: write of atom " + name_ + " failed before sending");
    }
    const bool done = inner_->compare_and_set(expected, std::move(next));
    if (fault == FaultyStore::Fault::reply_lost) {
      throw BackendError("faulty store: reply of the write of atom " + name_ + " lost");
    }
    return done;
  }

 private:
  FaultyStore& store_;
  std::unique_ptr<AtomState> inner_;
  std::string name_;
};

// Over a ZooKeeper atom, watches keep using its node (the core's private capability,
// forwarded), as they do without the faulty store.
class FaultyZooKeeperAtomState final : public FaultyAtomState,
                                       public avout::detail::ZooKeeperNodeAtom {
 public:
  FaultyZooKeeperAtomState(FaultyStore& store, std::unique_ptr<AtomState> inner, std::string name,
                           std::string node)
      : FaultyAtomState(store, std::move(inner), std::move(name)), node_(std::move(node)) {}
  std::string node_path() const override { return node_; }

 private:
  std::string node_;
};

class FaultyReferenceData : public ReferenceData {
 public:
  FaultyReferenceData(std::unique_ptr<ReferenceData> inner, FaultyStore& store)
      : store_(store), inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  void set(Bytes value, const Point& point) override {
    const auto fault = store_.draw(name(), true);
    if (fault == FaultyStore::Fault::fail_early) {
      throw BackendError("faulty store: write of ref " + name() + " at " + point.id +
                         " failed before sending");
    }
    inner_->set(std::move(value), point);
    if (fault == FaultyStore::Fault::reply_lost) {
      throw BackendError("faulty store: reply of the write of ref " + name() + " at " + point.id +
                         " lost");
    }
  }
  Bytes get(const Point& point) override {
    store_.draw(name(), false);
    return inner_->get(point);
  }
  void erase(const Point& point) override {
    store_.draw(name(), false);
    inner_->erase(point);
  }
  std::vector<Point> points() override {
    store_.draw(name(), false);
    return inner_->points();
  }

 private:
  FaultyStore& store_;
  std::unique_ptr<ReferenceData> inner_;
};

}  // namespace

FaultyStore::FaultyStore(Store& inner, std::uint64_t seed, StoreFaultRates rates)
    : inner_(inner), seed_(seed), rates_(rates) {}

std::string FaultyStore::description() const { return "faulty " + inner_.description(); }
std::size_t FaultyStore::max_value_size() const { return inner_.max_value_size(); }

std::unique_ptr<AtomState> FaultyStore::atom_state(const std::string& name) {
  auto inner = inner_.atom_state(name);
  if (auto* node = dynamic_cast<avout::detail::ZooKeeperNodeAtom*>(inner.get())) {
    std::string path = node->node_path();
    return std::make_unique<FaultyZooKeeperAtomState>(*this, std::move(inner), name,
                                                      std::move(path));
  }
  return std::make_unique<FaultyAtomState>(*this, std::move(inner), name);
}

std::unique_ptr<ReferenceData> FaultyStore::reference_data(const std::string& name) {
  // Over the ZooKeeper store, the values a commit creates inside its multi stay there: the
  // multi is the one request that can fail, as with the ZooKeeper store itself; writes
  // outside it meet the store's faults.
  return avout::detail::decorate<FaultyReferenceData>(inner_.reference_data(name), *this);
}

void FaultyStore::enable(bool on) {
  std::lock_guard lock(mutex_);
  enabled_ = on;
  if (!on) unavailable_until_ = {};
}

FaultyStore::Fault FaultyStore::draw(const std::string& what, bool write) {
  {
    std::lock_guard lock(mutex_);
    if (!enabled_) return Fault::none;
  }
  // Drawn from the calling thread's stream, all three whatever they give (one decision
  // never shifts the stream of the next); whether a call falls inside an outage another
  // thread began depends on timing, which no seed replays.
  const double outage = draw_fault(seed_), lost = draw_fault(seed_), early = draw_fault(seed_);
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mutex_);
    if (now >= unavailable_until_ && outage < rates_.outage) {
      unavailable_until_ = now + rates_.outage_length;
      note_fault("store outage");
    }
    if (now < unavailable_until_) {
      throw BackendError("faulty store: " + inner_.description() + " unavailable (" + what + ")");
    }
  }
  if (!write) return Fault::none;
  if (lost < rates_.reply_lost) return note_fault("store reply lost"), Fault::reply_lost;
  if (early < rates_.fail_early) return note_fault("store failed early"), Fault::fail_early;
  return Fault::none;
}

StoreFaultRates store_fault_rates_from_env(StoreFaultRates defaults) {
  rates_from_env("AVOUT_STORE_FAULTS", {{"lost", &defaults.reply_lost},
                                        {"early", &defaults.fail_early},
                                        {"outage", &defaults.outage}});
  return defaults;
}

}  // namespace avout::testing
