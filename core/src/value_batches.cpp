#include "value_batches.hpp"

#include <exception>
#include <functional>
#include <future>

namespace avout::detail {

namespace {
// Runs `work(i)` for every i < count, all but the first on threads of their own; waits for
// all, then rethrows the first failure.
void run_concurrently(std::size_t count, const std::function<void(std::size_t)>& work) {
  std::vector<std::future<void>> others;
  for (std::size_t i = 1; i < count; ++i) others.push_back(std::async(std::launch::async, work, i));
  std::exception_ptr failure;
  try {
    if (count > 0) work(0);
  } catch (...) {
    failure = std::current_exception();
  }
  for (auto& other : others) {
    try {
      other.get();
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}
}  // namespace

void write_per_store(std::vector<StoreWrites>& batches) {
  run_concurrently(batches.size(), [&](std::size_t i) { batches[i].store->set_values(batches[i].values); });
}

void erase_per_store(std::vector<StoreErasures>& batches) {
  run_concurrently(batches.size(), [&](std::size_t i) {
    try {
      batches[i].store->erase_values(batches[i].erasures);
    } catch (const std::exception&) {
      // Left for gc: an unreferenced point is garbage, never visible.
    }
  });
}

}  // namespace avout::detail
