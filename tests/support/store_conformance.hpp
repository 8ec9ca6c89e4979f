#pragma once
// The backend conformance cases: one set, run against every store (ZooKeeper, Redis,
// PostgreSQL) and runnable against a user's own. Include this header in a doctest file and
// call run_store_conformance(factory) inside a TEST_CASE; `factory` makes a fresh Store
// connected to a running server.

#include <avout/backend.hpp>
#include <avout/errors.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace avout::testing {

/// Makes a Store for the cases.
using StoreFactory = std::function<std::unique_ptr<Store>()>;

inline std::string conformance_name(const std::string& stem) {
  static std::mt19937_64 random{std::random_device{}()};
  return "/conformance/" + stem + "-" + std::to_string(random() % 1000000000);
}

/// Atom cells: absent reads, create-once, stale CAS, concurrent increments, size limit.
inline void run_atom_state_conformance(const StoreFactory& make_store) {
  auto store = make_store();
  auto cell = store->atom_state(conformance_name("cell"));
  const Versioned absent = cell->get();
  CHECK_FALSE(absent.exists());
  CHECK(cell->compare_and_set(absent, to_bytes("one")));
  CHECK_FALSE(cell->compare_and_set(absent, to_bytes("again")));  // created once only
  const Versioned first = cell->get();
  REQUIRE(first.exists());
  CHECK(first.value == to_bytes("one"));
  CHECK(cell->compare_and_set(first, to_bytes("two")));
  CHECK_FALSE(cell->compare_and_set(first, to_bytes("stale")));
  CHECK(cell->get().value == to_bytes("two"));
  CHECK(cell->compare_and_set(cell->get(), Bytes{}));  // an empty value is a value
  CHECK(cell->get().exists());

  // A value over the limit is refused before anything is written.
  const Versioned before = cell->get();
  CHECK_THROWS_AS(cell->compare_and_set(before, Bytes(store->max_value_size() + 1, 'x')),
                  ValueTooLarge);
  CHECK(cell->get().version == before.version);

  // Odd names are distinct cells.
  const std::string odd = conformance_name("with space 'quote' \"dq\" ünï/slash");
  auto odd_cell = store->atom_state(odd);
  CHECK(odd_cell->compare_and_set(Versioned{}, to_bytes("odd")));
  CHECK(store->atom_state(odd)->get().value == to_bytes("odd"));

  // Eight threads, read-CAS loops: no increment lost.
  const std::string counter = conformance_name("counter");
  REQUIRE(store->atom_state(counter)->compare_and_set(Versioned{}, to_bytes("0")));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      try {
        auto own = make_store();
        auto state = own->atom_state(counter);
        for (int i = 0; i < 100; ++i) {
          while (true) {
            const Versioned now = state->get();
            const long value = std::stol(std::string(as_chars(now.value)));
            if (state->compare_and_set(now, to_bytes(std::to_string(value + 1)))) break;
          }
        }
      } catch (...) {
        ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(failures == 0);
  CHECK(std::string(as_chars(store->atom_state(counter)->get().value)) == "800");
}

/// Ref versions: set/get/erase/points, create-only, typed miss.
inline void run_reference_data_conformance(const StoreFactory& make_store) {
  auto store = make_store();
  const std::string name = conformance_name("ref");
  auto data = store->reference_data(name);
  CHECK(data->name() == name);
  CHECK(data->points().empty());
  const Point a{"point-a"};
  const Point b{"point-b"};
  data->set(to_bytes("A"), a);
  data->set(Bytes{}, b);
  CHECK(data->get(a) == to_bytes("A"));
  CHECK(data->get(b).empty());
  CHECK_THROWS_AS(data->set(to_bytes("again"), a), BackendError);
  CHECK(data->get(a) == to_bytes("A"));
  auto points = data->points();
  std::sort(points.begin(), points.end());
  CHECK(points == std::vector<Point>{a, b});
  data->erase(a);
  data->erase(a);  // erasing twice is no error
  CHECK_THROWS_AS(data->get(a), MissingPoint);
  CHECK(data->points() == std::vector<Point>{b});
  CHECK_THROWS_AS(data->set(Bytes(store->max_value_size() + 1, 'x'), Point{"big"}), ValueTooLarge);
  CHECK_THROWS_AS(data->get(Point{"big"}), MissingPoint);
  // Another ref's points are its own.
  auto other = store->reference_data(name + "-other");
  CHECK_THROWS_AS(other->get(b), MissingPoint);
}

/// The batch calls Store::set_values / get_values / erase_values: many points of several refs,
/// an existing point, an oversized value, points never stored or gone, empty batches.
inline void run_batch_conformance(const StoreFactory& make_store) {
  auto store = make_store();
  const std::string stem = conformance_name("batch");
  std::vector<std::unique_ptr<ReferenceData>> refs;
  for (int r = 0; r < 3; ++r) refs.push_back(store->reference_data(stem + "-" + std::to_string(r)));
  std::vector<PointValue> values;
  for (int i = 0; i < 30; ++i) {
    const std::string id = "point-" + std::to_string(i);
    values.push_back(PointValue{refs[i % 3].get(), Point{id}, to_bytes("value " + id)});
  }
  values.push_back(PointValue{refs[0].get(), Point{"empty"}, Bytes{}});
  store->set_values(values);
  for (const auto& v : values) CHECK(v.data->get(v.point) == v.value);
  for (const auto& ref : refs) CHECK(ref->points().size() == (ref == refs[0] ? 11u : 10u));

  // Read back in one batch, in order: a point never stored and another ref's point are empty.
  std::vector<PointRead> reads;
  for (const auto& v : values) reads.push_back(PointRead{v.data, v.point});
  reads.insert(reads.begin() + 5, PointRead{refs[0].get(), Point{"never-stored"}});
  reads.insert(reads.begin() + 7, PointRead{refs[1].get(), Point{"point-0"}});  // refs[0]'s
  reads.push_back(reads.front());                                               // a point twice
  const auto read = store->get_values(reads);
  REQUIRE(read.size() == reads.size());
  for (std::size_t i = 0; i < reads.size(); ++i) {
    if (i == 5 || i == 7) {
      CHECK_FALSE(read[i].has_value());
      continue;
    }
    const auto& value = reads[i].data->get(reads[i].point);
    REQUIRE(read[i].has_value());
    CHECK(*read[i] == value);
  }

  // An existing point in a batch is an error, and the stored value stays.
  const std::vector<PointValue> clash{PointValue{refs[1].get(), Point{"fresh"}, to_bytes("F")},
                                      PointValue{refs[2].get(), Point{"point-2"}, to_bytes("X")}};
  CHECK_THROWS_AS(store->set_values(clash), BackendError);
  CHECK(refs[2]->get(Point{"point-2"}) == to_bytes("value point-2"));
  const std::vector<PointValue> twice{PointValue{refs[0].get(), Point{"twice"}, to_bytes("1")},
                                      PointValue{refs[0].get(), Point{"twice"}, to_bytes("2")}};
  CHECK_THROWS_AS(store->set_values(twice), BackendError);

  // An oversized value is refused before anything of the batch is written.
  const std::vector<PointValue> oversized{
      PointValue{refs[0].get(), Point{"small"}, to_bytes("s")},
      PointValue{refs[1].get(), Point{"big"}, Bytes(store->max_value_size() + 1, 'x')}};
  CHECK_THROWS_AS(store->set_values(oversized), ValueTooLarge);
  CHECK_THROWS_AS(refs[0]->get(Point{"small"}), MissingPoint);

  // Erasing, then erasing again (gone points are no error).
  std::vector<PointErasure> erasures;
  for (const auto& v : values) erasures.push_back(PointErasure{v.data, v.point});
  store->erase_values(erasures);
  store->erase_values(erasures);
  for (const auto& v : values) CHECK_THROWS_AS(v.data->get(v.point), MissingPoint);
  for (const auto& value : store->get_values(reads)) CHECK_FALSE(value.has_value());
  for (int r = 0; r < 3; ++r) {
    for (const auto& point : refs[r]->points()) {
      CHECK(((point.id == "fresh" && r == 1) || (point.id == "twice" && r == 0)));
    }
  }

  // Empty batches do nothing.
  store->set_values({});
  store->erase_values({});
  CHECK(store->get_values({}).empty());
}

/// ReferenceData::erase_values: values of several refs of one store erased through one of
/// their version sets once the Store object is gone (as the core's background erasure does),
/// twice, and an empty batch.
inline void run_version_set_batch_conformance(const StoreFactory& make_store) {
  const std::string stem = conformance_name("version-set-batch");
  std::vector<std::unique_ptr<ReferenceData>> refs;
  std::vector<PointValue> values;
  {
    auto store = make_store();
    for (int r = 0; r < 3; ++r)
      refs.push_back(store->reference_data(stem + "-" + std::to_string(r)));
    for (int i = 0; i < 9; ++i) {
      const std::string id = "point-" + std::to_string(i);
      values.push_back(PointValue{refs[i % 3].get(), Point{id}, to_bytes("value " + id)});
    }
    values.push_back(PointValue{refs[1].get(), Point{"kept"}, to_bytes("kept")});
    store->set_values(values);
  }
  values.pop_back();  // "kept" stays
  std::vector<PointErasure> erasures;
  for (const auto& v : values) erasures.push_back(PointErasure{v.data, v.point});
  refs[2]->erase_values(erasures);
  refs[2]->erase_values(erasures);  // gone points are no error
  refs[0]->erase_values({});
  for (const auto& v : values) CHECK_THROWS_AS(v.data->get(v.point), MissingPoint);
  CHECK(refs[0]->points().empty());
  CHECK(refs[1]->points() == std::vector<Point>{Point{"kept"}});
  CHECK(refs[1]->get(Point{"kept"}) == to_bytes("kept"));
  CHECK(refs[2]->points().empty());
}

/// Every kind of case.
inline void run_store_conformance(const StoreFactory& make_store) {
  SUBCASE("atom state") { run_atom_state_conformance(make_store); }
  SUBCASE("reference data") { run_reference_data_conformance(make_store); }
  SUBCASE("batches") { run_batch_conformance(make_store); }
  SUBCASE("batches through a version set") { run_version_set_batch_conformance(make_store); }
}

}  // namespace avout::testing
