#include "support/faulty_store.hpp"

#include <cstdlib>
#include <sstream>

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
  std::string zookeeper_path() const override { return inner_->zookeeper_path(); }

 private:
  FaultyStore& store_;
  std::unique_ptr<AtomState> inner_;
  std::string name_;
};

class FaultyReferenceData : public ReferenceData {
 public:
  FaultyReferenceData(FaultyStore& store, std::unique_ptr<ReferenceData> inner)
      : store_(store), inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  void set(Bytes value, const Point& point) override {
    const auto fault = store_.draw(name(), true);
    if (fault == FaultyStore::Fault::fail_early) {
      throw BackendError("faulty store: write of ref " + name() + " at " + point.id + " failed before sending");
    }
    inner_->set(std::move(value), point);
    if (fault == FaultyStore::Fault::reply_lost) {
      throw BackendError("faulty store: reply of the write of ref " + name() + " at " + point.id + " lost");
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
  std::optional<op::Create> commit_operation(const Bytes& value, const Point& point) override {
    return inner_->commit_operation(value, point);
  }

 private:
  FaultyStore& store_;
  std::unique_ptr<ReferenceData> inner_;
};

}  // namespace

FaultyStore::FaultyStore(Store& inner, std::uint64_t seed, StoreFaultRates rates)
    : inner_(inner), random_(seed), rates_(rates) {}

std::string FaultyStore::description() const { return "faulty " + inner_.description(); }
std::size_t FaultyStore::max_value_size() const { return inner_.max_value_size(); }

std::unique_ptr<AtomState> FaultyStore::atom_state(const std::string& name) {
  return std::make_unique<FaultyAtomState>(*this, inner_.atom_state(name), name);
}

std::unique_ptr<ReferenceData> FaultyStore::reference_data(const std::string& name) {
  return std::make_unique<FaultyReferenceData>(*this, inner_.reference_data(name));
}

void FaultyStore::enable(bool on) {
  std::lock_guard lock(mutex_);
  enabled_ = on;
  if (!on) unavailable_until_ = {};
}

FaultyStore::Fault FaultyStore::draw(const std::string& what, bool write) {
  std::lock_guard lock(mutex_);
  if (!enabled_) return Fault::none;
  const auto now = std::chrono::steady_clock::now();
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  if (now >= unavailable_until_ && unit(random_) < rates_.outage) {
    unavailable_until_ = now + rates_.outage_length;
  }
  if (now < unavailable_until_) {
    throw BackendError("faulty store: " + inner_.description() + " unavailable (" + what + ")");
  }
  if (!write) return Fault::none;
  if (unit(random_) < rates_.reply_lost) return Fault::reply_lost;
  if (unit(random_) < rates_.fail_early) return Fault::fail_early;
  return Fault::none;
}

StoreFaultRates store_fault_rates_from_env(StoreFaultRates defaults) {
  const char* text = std::getenv("AVOUT_STORE_FAULTS");
  if (text == nullptr) return defaults;
  if (std::string(text) == "off") return StoreFaultRates{};
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto equals = item.find('=');
    if (equals == std::string::npos) continue;
    const std::string key = item.substr(0, equals);
    const double value = std::stod(item.substr(equals + 1));
    if (key == "lost") defaults.reply_lost = value;
    else if (key == "early") defaults.fail_early = value;
    else if (key == "outage") defaults.outage = value;
  }
  return defaults;
}

}  // namespace avout::testing
