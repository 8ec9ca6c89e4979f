#include "timing_store.hpp"

#include "runtime/zookeeper_held_values.hpp"

namespace avout::bench {

namespace {

// Adds the time since it was made to a counter when it goes out of scope.
class Stopwatch {
 public:
  explicit Stopwatch(std::atomic<std::uint64_t>& into) : into_(into) {}
  ~Stopwatch() {
    into_ += static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                            std::chrono::steady_clock::now() - start_)
                                            .count());
  }
  Stopwatch(const Stopwatch&) = delete;
  Stopwatch& operator=(const Stopwatch&) = delete;

 private:
  std::atomic<std::uint64_t>& into_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Counts an erase call once it is over, its time included: erasures run on the client's
// background thread, and a workload that waits for the count may then drop the tally.
void counted_erases(StoreTally& tally, std::size_t values) {
  ++tally.erase_calls;
  tally.erases += values;  // last: what waiters watch
}

class TimingData : public ReferenceData {
 public:
  TimingData(std::unique_ptr<ReferenceData> inner, StoreTally& tally)
      : inner(std::move(inner)), tally_(tally) {}
  std::string name() const override { return inner->name(); }
  void set(Bytes value, const Point& point) override {
    Stopwatch watch(tally_.write_ns);
    ++tally_.writes;
    ++tally_.write_calls;
    inner->set(std::move(value), point);
  }
  Bytes get(const Point& point) override {
    Stopwatch watch(tally_.read_ns);
    ++tally_.reads;
    return inner->get(point);
  }
  void erase(const Point& point) override {
    {
      Stopwatch watch(tally_.erase_ns);
      inner->erase(point);
    }
    counted_erases(tally_, 1);
  }
  std::vector<Point> points() override { return inner->points(); }
  void erase_values(std::span<const PointErasure> erasures) override;
  /// The wrapped version set (the inner store's batch calls take its own).
  std::unique_ptr<ReferenceData> inner;

 private:
  StoreTally& tally_;
};

ReferenceData* unwrap(ReferenceData* data) { return static_cast<TimingData*>(data)->inner.get(); }

// The wrapped version sets of `erasures`, for the inner store's batch calls.
std::vector<PointErasure> unwrapped(std::span<const PointErasure> erasures) {
  std::vector<PointErasure> inner;
  for (const auto& e : erasures) inner.push_back({unwrap(e.data), e.point});
  return inner;
}

void TimingData::erase_values(std::span<const PointErasure> erasures) {
  const auto inner_erasures = unwrapped(erasures);
  {
    Stopwatch watch(tally_.erase_ns);
    inner->erase_values(inner_erasures);
  }
  counted_erases(tally_, erasures.size());
}

}  // namespace

std::unique_ptr<ReferenceData> TimingStore::reference_data(const std::string& name) {
  // Over the ZooKeeper store, values a commit creates inside its multi stay there, as without
  // the timer: they cost no store call to time.
  return detail::decorate<TimingData>(inner_.reference_data(name), tally_);
}

void TimingStore::set_values(std::span<const PointValue> values) {
  std::vector<PointValue> inner;
  for (const auto& v : values) inner.push_back({unwrap(v.data), v.point, v.value});
  Stopwatch watch(tally_.write_ns);
  tally_.writes += values.size();
  ++tally_.write_calls;
  inner_.set_values(inner);
}

std::vector<std::optional<Bytes>> TimingStore::get_values(std::span<const PointRead> reads) {
  std::vector<PointRead> inner;
  for (const auto& r : reads) inner.push_back({unwrap(r.data), r.point});
  Stopwatch watch(tally_.read_ns);
  tally_.reads += reads.size();
  return inner_.get_values(inner);
}

void TimingStore::erase_values(std::span<const PointErasure> erasures) {
  const auto inner = unwrapped(erasures);
  {
    Stopwatch watch(tally_.erase_ns);
    inner_.erase_values(inner);
  }
  counted_erases(tally_, erasures.size());
}

}  // namespace avout::bench
