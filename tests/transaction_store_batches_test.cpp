// How a commit talks to its stores: one batch per store, the stores at the same time, and the
// values a commit trimmed from history erased afterwards without the caller waiting for them.
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include "stm/background_erasure.hpp"  // white-box: how queued erasures are grouped
#include "stm/value_batches.hpp"       // white-box: who runs a commit's batches
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <thread>
#include <tuple>

#include <unistd.h>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

class CountingStore;

// A ref's version set that counts its single writes, reads and erasures.
class CountingData final : public avout::ReferenceData {
 public:
  CountingData(std::unique_ptr<avout::ReferenceData> inner, CountingStore& store)
      : inner_(std::move(inner)), store_(store) {}
  std::string name() const override { return inner_->name(); }
  void set(avout::Bytes value, const avout::Point& point) override;
  avout::Bytes get(const avout::Point& point) override;
  void erase(const avout::Point& point) override;
  std::vector<avout::Point> points() override { return inner_->points(); }
  void erase_values(std::span<const avout::PointErasure> erasures) override;
  avout::ReferenceData& inner() { return *inner_; }

 private:
  std::unique_ptr<avout::ReferenceData> inner_;
  CountingStore& store_;
};

// A store that counts how its values are written, read and erased, and runs a hook before
// each batch write, batch read and erasure.
class CountingStore final : public avout::Store {
 public:
  explicit CountingStore(avout::Store& inner) : inner_(inner) {}
  std::string description() const override { return "counting " + inner_.description(); }
  avout::StoreIdentity identity() const override { return inner_.identity(); }
  std::size_t max_value_size() const override { return inner_.max_value_size(); }
  std::unique_ptr<avout::AtomState> atom_state(const std::string& name) override {
    return inner_.atom_state(name);
  }
  std::unique_ptr<avout::ReferenceData> reference_data(const std::string& name) override {
    return std::make_unique<CountingData>(inner_.reference_data(name), *this);
  }
  void set_values(std::span<const avout::PointValue> values) override {
    ++batch_writes;
    if (before_batch_write) before_batch_write();
    std::vector<avout::PointValue> inner;
    for (const auto& v : values) {
      inner.push_back({&static_cast<CountingData*>(v.data)->inner(), v.point, v.value});
    }
    inner_.set_values(inner);
  }
  void erase_values(std::span<const avout::PointErasure> erasures) override {
    for (const auto& e : erasures) e.data->erase(e.point);
  }
  std::vector<std::optional<avout::Bytes>> get_values(
      std::span<const avout::PointRead> reads) override {
    if (before_batch_read) before_batch_read();
    ++batch_reads;
    batch_read_values += static_cast<int>(reads.size());
    std::vector<avout::PointRead> inner;
    for (const auto& r : reads)
      inner.push_back({&static_cast<CountingData*>(r.data)->inner(), r.point});
    return inner_.get_values(inner);
  }

  std::atomic<int> batch_writes{0};       ///< set_values calls
  std::atomic<int> batch_reads{0};        ///< get_values calls
  std::atomic<int> batch_read_values{0};  ///< values asked for by get_values calls
  std::atomic<int> single_reads{0};       ///< ReferenceData::get calls
  std::atomic<int> single_writes{0};      ///< ReferenceData::set calls
  std::atomic<int> erasures{0};           ///< values erased
  std::atomic<int> erase_batches{0};      ///< ReferenceData::erase_values calls
  std::function<void()> before_batch_write;
  std::function<void()> before_batch_read;
  std::function<void()> before_erase;

 private:
  avout::Store& inner_;
};

void CountingData::set(avout::Bytes value, const avout::Point& point) {
  ++store_.single_writes;
  inner_->set(std::move(value), point);
}

avout::Bytes CountingData::get(const avout::Point& point) {
  ++store_.single_reads;
  return inner_->get(point);
}

void CountingData::erase(const avout::Point& point) {
  if (store_.before_erase) store_.before_erase();
  inner_->erase(point);
  ++store_.erasures;
}

void CountingData::erase_values(std::span<const avout::PointErasure> erasures) {
  if (store_.before_erase) store_.before_erase();
  std::vector<avout::PointErasure> inner;
  for (const auto& e : erasures)
    inner.push_back({&static_cast<CountingData*>(e.data)->inner(), e.point});
  inner_->erase_values(inner);
  ++store_.erase_batches;
  store_.erasures += static_cast<int>(erasures.size());
}

// Opens when told to, or gives up after `limit`; says which.
class Gate {
 public:
  bool wait(std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return open_; });
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
};

// Waits until `store` erased `count` values in all (10 s, scaled); true when exactly that many.
bool erased_by(CountingStore& store, int count) {
  const auto deadline = std::chrono::steady_clock::now() + scaled(10s);
  while (store.erasures < count && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  return store.erasures == count;
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 6000ms};
}

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/store-batches-test", stem);
}

// One client (min_history 0: each commit trims the version it replaced) and one ref of it in
// a counting wrapper of the real Redis store; the servers must be started first.
struct CountedRef {
  explicit CountedRef(const std::string& stem)
      : name(unique_name(stem)), ref(client.ref<long>(name, 0, counting)) {}
  // How many versions the store holds for the ref.
  std::size_t stored_versions() {
    return counting.reference_data(client.ref_value_key(name))->points().size();
  }

  avout::Client client{options()};
  avout::redis::Store redis{avout::testing::shared_redis().url()};
  CountingStore counting{redis};
  std::string name;
  avout::Ref<long> ref;
};

// One client and two refs of it, each in its own counting wrapper of the real Redis store;
// the servers must be started first.
struct TwoCountedStores {
  explicit TwoCountedStores(const std::string& stem)
      : a(client.ref<long>(unique_name(stem + "-first"), 0, first)),
        b(client.ref<long>(unique_name(stem + "-second"), 0, second)) {}

  avout::Client client{options()};
  avout::redis::Store redis{avout::testing::shared_redis().url()};
  CountingStore first{redis};
  CountingStore second{redis};
  avout::Ref<long> a;
  avout::Ref<long> b;
};

// Three refs of one client, two in its first counting store and one in its second, and a
// second client holding the same refs in the plain store: what it writes, the first client
// has never seen, so no value of it is cached there.
struct ChangedElsewhere : TwoCountedStores {
  explicit ChangedElsewhere(const std::string& stem)
      : TwoCountedStores(stem), c(client.ref<long>(unique_name(stem + "-third"), 0, first)) {}
  // Sets the three refs through the second client.
  void change(long x, long y, long z) {
    other.dosync([&] {
      a_there.ref_set(x);
      b_there.ref_set(y);
      c_there.ref_set(z);
    });
  }
  int single_reads() const { return first.single_reads + second.single_reads; }
  int batch_reads() const { return first.batch_reads + second.batch_reads; }

  avout::Ref<long> c;
  avout::Client other{options()};
  avout::redis::Store other_redis{avout::testing::shared_redis().url()};
  avout::Ref<long> a_there{other.ref<long>(a.name(), 0, other_redis)};
  avout::Ref<long> b_there{other.ref<long>(b.name(), 0, other_redis)};
  avout::Ref<long> c_there{other.ref<long>(c.name(), 0, other_redis)};
};

}  // namespace

TEST_CASE("a commit writes all its values for one store in one batch") {
  avout::testing::start_shared_servers();
  avout::Client client(options());
  avout::redis::Store redis(avout::testing::shared_redis().url());
  CountingStore counting(redis);
  const std::string prefix = unique_name("one-batch");
  std::vector<avout::Ref<long>> refs;
  for (int i = 0; i < 8; ++i)
    refs.push_back(client.ref<long>(prefix + "/r" + std::to_string(i), 0, counting));
  const int batches = counting.batch_writes;
  const int singles = counting.single_writes;
  client.dosync([&] {
    for (auto& ref : refs) ref.alter([](long v) { return v + 1; });
  });
  CHECK(counting.batch_writes - batches == 1);
  CHECK(counting.single_writes - singles == 0);
  for (auto& ref : refs) CHECK(ref.deref() == 1);
}

TEST_CASE("deref_all reads the values another client wrote with one batch per store") {
  avout::testing::start_shared_servers();
  ChangedElsewhere three("read-together");
  three.change(11, 22, 33);
  const int singles = three.single_reads();
  CHECK(avout::deref_all(three.a, three.b, three.c) == std::tuple<long, long, long>{11, 22, 33});
  CHECK(three.single_reads() == singles);
  CHECK(three.first.batch_reads == 1);
  CHECK(three.first.batch_read_values == 2);
  CHECK(three.second.batch_reads == 1);
  CHECK(three.second.batch_read_values == 1);
  // Cached now: read again, nothing is asked of the stores.
  CHECK(avout::deref_all(three.a, three.b, three.c) == std::tuple<long, long, long>{11, 22, 33});
  CHECK(three.batch_reads() == 2);
}

TEST_CASE("a store that fails a batch read fails deref_all, and the next one reads again") {
  avout::testing::start_shared_servers();
  ChangedElsewhere three("read-fails");
  three.change(5, 6, 7);
  std::atomic<int> failures{1};
  three.first.before_batch_read = [&] {
    if (failures-- > 0) throw avout::StoreUnavailable("counting store: the read is refused, once");
  };
  CHECK_THROWS_AS(avout::deref_all(three.a, three.b, three.c), avout::StoreUnavailable);
  CHECK(three.second.batch_reads == 1);  // the other store's batch ran to its end meanwhile
  CHECK(avout::deref_all(three.a, three.b, three.c) == std::tuple<long, long, long>{5, 6, 7});
  CHECK(three.first.batch_reads == 1);
}

TEST_CASE("a commit reads the newest values of its commuted refs with one batch per store") {
  avout::testing::start_shared_servers();
  ChangedElsewhere three("commuted-reads");
  int singles = 0;
  int batches = 0;
  bool changed = false;
  three.client.dosync([&] {
    for (auto* ref : {&three.a, &three.b, &three.c}) ref->commute([](long v) { return v + 1; });
    if (!changed) {  // once, on another thread: a thread runs one client's transaction at a time
      std::thread([&] { three.change(100, 200, 300); }).join();
      changed = true;
    }
    singles = three.single_reads();
    batches = three.batch_reads();
  });
  CHECK(avout::deref_all(three.a, three.b, three.c) == std::tuple<long, long, long>{101, 201, 301});
  CHECK(three.single_reads() == singles);
  CHECK(three.batch_reads() - batches == 2);
}

TEST_CASE("a commit writes to its stores at the same time") {
  avout::testing::start_shared_servers();
  TwoCountedStores two("together");
  // Each batch waits for the other to start: written one after the other, the first would
  // give up waiting.
  Gate first_started;
  Gate second_started;
  std::atomic<bool> met_first{false};
  std::atomic<bool> met_second{false};
  two.first.before_batch_write = [&] {
    first_started.open();
    met_second = second_started.wait(scaled(5s));
  };
  two.second.before_batch_write = [&] {
    second_started.open();
    met_first = first_started.wait(scaled(5s));
  };
  two.client.dosync([&] {
    two.a.ref_set(1);
    two.b.ref_set(2);
  });
  CHECK(met_first);
  CHECK(met_second);
  CHECK(two.a.deref() == 1);
  CHECK(two.b.deref() == 2);
}

TEST_CASE("commits write their second store on threads kept for the client, not on new ones") {
  avout::testing::start_shared_servers();
  TwoCountedStores two("kept");
  // Kernel thread ids are not reused soon, unlike std::thread::id values of joined threads.
  std::mutex mutex;
  std::set<pid_t> writers;
  auto note = [&] {
    std::lock_guard lock(mutex);
    writers.insert(gettid());
  };
  two.first.before_batch_write = note;
  two.second.before_batch_write = note;
  for (int i = 1; i <= 20; ++i) {
    two.client.dosync([&] {
      two.a.ref_set(i);
      two.b.ref_set(-i);
    });
  }
  CHECK(two.a.deref() == 20);
  CHECK(two.b.deref() == -20);
  // The committing thread and the client's two helpers at most; a thread per commit was 21.
  CHECK(writers.size() <= 3);
  CHECK(writers.contains(gettid()));
}

TEST_CASE("a store batch no helper has begun is run by the committing thread") {
  avout::testing::start_shared_servers();
  avout::redis::Store redis(avout::testing::shared_redis().url());
  CountingStore lead(redis);
  CountingStore held(redis);
  CountingStore free_one(redis);
  auto lead_data = lead.reference_data(unique_name("busy-lead"));
  auto held_data = held.reference_data(unique_name("busy-held"));
  auto free_data = free_one.reference_data(unique_name("busy-free"));
  avout::detail::StoreBatches batches(1);
  // The one helper is kept busy by a commit's second batch, which waits for `release`; its
  // first batch waits until the helper has begun, so the helper is the one that takes it.
  Gate release;
  Gate helper_busy;
  std::atomic<pid_t> helper{0};
  lead.before_batch_write = [&] { (void)helper_busy.wait(scaled(5s)); };
  held.before_batch_write = [&] {
    helper = gettid();
    helper_busy.open();
    (void)release.wait(scaled(10s));
  };
  std::vector<avout::detail::StoreWrites> blocking{
      {&lead, {{lead_data.get(), avout::Point{"b-0"}, avout::Bytes{1}}}},
      {&held, {{held_data.get(), avout::Point{"b-1"}, avout::Bytes{2}}}}};
  std::atomic<pid_t> first_thread{0};
  std::thread first([&] {
    first_thread = gettid();
    batches.write(blocking);
  });
  REQUIRE(helper_busy.wait(scaled(5s)));
  // Meanwhile another commit's two batches: both run here, without waiting for the helper.
  std::set<pid_t> writers;
  free_one.before_batch_write = [&] { writers.insert(gettid()); };
  std::vector<avout::detail::StoreWrites> other{
      {&free_one, {{free_data.get(), avout::Point{"o-0"}, avout::Bytes{3}}}},
      {&free_one, {{free_data.get(), avout::Point{"o-1"}, avout::Bytes{4}}}}};
  const auto start = std::chrono::steady_clock::now();
  batches.write(other);
  const auto took = std::chrono::steady_clock::now() - start;
  release.open();
  first.join();
  CHECK(helper != first_thread);
  CHECK(writers == std::set<pid_t>{gettid()});
  CHECK(took < scaled(5s));  // the gate holds the helper for 10 s
  CHECK(free_data->get(avout::Point{"o-1"}) == avout::Bytes{4});
  CHECK(held_data->get(avout::Point{"b-1"}) == avout::Bytes{2});
}

TEST_CASE("a failed store batch is reported once every batch of the commit has finished") {
  avout::testing::start_shared_servers();
  avout::redis::Store redis(avout::testing::shared_redis().url());
  CountingStore failing(redis);
  CountingStore slow(redis);
  auto failing_data = failing.reference_data(unique_name("fail-fails"));
  auto slow_data = slow.reference_data(unique_name("fail-slow"));
  failing.before_batch_write = [] { throw std::runtime_error("refused on purpose"); };
  slow.before_batch_write = [&] { std::this_thread::sleep_for(200ms); };
  avout::detail::StoreBatches batches;
  std::vector<avout::detail::StoreWrites> writes{
      {&failing, {{failing_data.get(), avout::Point{"f-0"}, avout::Bytes{1}}}},
      {&slow, {{slow_data.get(), avout::Point{"f-1"}, avout::Bytes{2}}}}};
  CHECK_THROWS_WITH_AS(batches.write(writes), "refused on purpose", std::runtime_error);
  // Written before write() returned: the failure waited for it.
  CHECK(slow.batch_writes == 1);
  CHECK(slow_data->get(avout::Point{"f-1"}) == avout::Bytes{2});
}

TEST_CASE("values a commit trimmed are erased after it returned, without the caller waiting") {
  avout::testing::start_shared_servers();
  CountedRef one("trimmed");
  one.client.dosync([&] { one.ref.ref_set(1); });
  REQUIRE(erased_by(one.counting, 1));  // the initial value, trimmed by the first commit
  Gate released;
  one.counting.before_erase = [&] { (void)released.wait(scaled(5s)); };
  const int erased = one.counting.erasures;
  one.client.dosync([&] { one.ref.ref_set(2); });
  CHECK(one.counting.erasures == erased);  // held back, and the commit returned all the same
  released.open();
  CHECK(erased_by(one.counting, erased + 1));
  CHECK(one.ref.deref() == 2);
  CHECK(one.stored_versions() == 1);
}

TEST_CASE("the values a commit trimmed from one store are erased in one batch") {
  avout::testing::start_shared_servers();
  avout::Client client(options());  // min_history 0: each commit trims the version it replaced
  avout::redis::Store redis(avout::testing::shared_redis().url());
  CountingStore first(redis);
  CountingStore second(redis);
  const std::string prefix = unique_name("trimmed-batch");
  std::vector<avout::Ref<long>> refs;
  for (int i = 0; i < 8; ++i) {
    refs.push_back(client.ref<long>(prefix + "/r" + std::to_string(i), 0, i < 5 ? first : second));
  }
  client.dosync([&] {
    for (auto& ref : refs) ref.alter([](long v) { return v + 1; });
  });
  REQUIRE(erased_by(first, 5));  // the initial values, trimmed by this first commit
  REQUIRE(erased_by(second, 3));
  CHECK(first.erase_batches == 1);
  CHECK(second.erase_batches == 1);
  for (std::size_t i = 0; i < refs.size(); ++i) {
    CHECK(refs[i].deref() == 1);
    auto& store = i < 5 ? first : second;
    CHECK(store.reference_data(client.ref_value_key(prefix + "/r" + std::to_string(i)))
              ->points()
              .size() == 1);
  }
}

TEST_CASE("values trimmed by commits that follow each other closely are erased in one batch") {
  avout::testing::start_shared_servers();
  CountedRef one("gathered");
  // The first erasure waits at a gate while three more commits queue theirs behind it.
  Gate erasing;
  Gate released;
  std::atomic<bool> held{false};
  one.counting.before_erase = [&] {
    if (held.exchange(true)) return;
    erasing.open();
    (void)released.wait(scaled(10s));
  };
  one.client.dosync([&] { one.ref.ref_set(1); });
  REQUIRE(erasing.wait(scaled(10s)));
  for (long value = 2; value <= 4; ++value) one.client.dosync([&] { one.ref.ref_set(value); });
  released.open();
  CHECK(erased_by(one.counting, 4));
  CHECK(one.counting.erase_batches == 2);  // the held one, then the three queued behind it
  CHECK(one.ref.deref() == 4);
  CHECK(one.stored_versions() == 1);
}

TEST_CASE("queued erasures join only where a version set proves them of one store") {
  avout::testing::start_shared_servers();
  avout::redis::Store redis(avout::testing::shared_redis().url());
  const std::string prefix = unique_name("merge");
  auto x = redis.reference_data(prefix + "/x");
  auto y = redis.reference_data(prefix + "/y");
  auto z = redis.reference_data(prefix + "/z");
  const auto at = [](const char* id) { return avout::Point{id}; };
  using avout::detail::ErasureBatch;
  // Batches of one Store address that share no version set stay apart: the address alone
  // may be a destroyed store's, reused.
  auto apart = avout::detail::merge_sharing_version_sets(
      {ErasureBatch{{x.get(), at("1")}}, ErasureBatch{{y.get(), at("2")}}});
  CHECK(apart.size() == 2);
  // A shared version set joins batches, and through them others (x links the first and
  // third, y the second and third).
  auto joined = avout::detail::merge_sharing_version_sets(
      {ErasureBatch{{x.get(), at("1")}}, ErasureBatch{{y.get(), at("2")}},
       ErasureBatch{{y.get(), at("3")}, {x.get(), at("4")}}, ErasureBatch{{z.get(), at("5")}}});
  REQUIRE(joined.size() == 2);
  CHECK(joined[0].size() == 4);
  CHECK(joined[1].size() == 1);
  CHECK(joined[1][0].data == z.get());
  CHECK(avout::detail::merge_sharing_version_sets({}).empty());
}
