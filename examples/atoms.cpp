// Atoms: one value shared by many processes, changed by compare-and-set.
//
// One atom keeps its value in ZooKeeper, another in Redis (ZooKeeper still coordinates and
// notifies). Shows swap, reset, compare_and_set, a validator and a watch that sees a change
// made by another client. Every step checks its result.
//
//   AVOUT_ZOOKEEPER=127.0.0.1:2181 AVOUT_REDIS=redis://127.0.0.1:6379 ./avout_example_atoms
//
// Exit codes: 0 all as expected, 1 a wrong result or an error, 2 usage.
#include <avout/avout.hpp>
#include <avout/redis.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <random>
#include <string>

using namespace std::chrono_literals;

namespace {

// The value of environment variable `name`, or "" when it is not set.
std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// Stops the program with exit code 1 when a result is not what the example expects.
void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::cerr << "atoms: WRONG RESULT: " << what << "\n";
    std::exit(1);
  }
  std::cout << "  ok: " << what << "\n";
}

}  // namespace

int main() {
  const std::string zookeeper = env("AVOUT_ZOOKEEPER");
  const std::string redis_url = env("AVOUT_REDIS");
  if (zookeeper.empty() || redis_url.empty()) {
    std::cerr
        << "usage: AVOUT_ZOOKEEPER=host:port AVOUT_REDIS=redis://host:port avout_example_atoms\n"
           "  AVOUT_ZOOKEEPER  ZooKeeper connect string (coordination, and one atom's value)\n"
           "  AVOUT_REDIS      Redis URL, redis://[[user]:password@]host:port[/db] (the other "
           "atom's value)\n";
    return 2;
  }
  // Fresh names for every run, so the initial values below are the ones used.
  const std::string run = "/examples/atoms-" + std::to_string(std::random_device{}());

  try {
    avout::Client client(zookeeper);       // one ZooKeeper session
    avout::redis::Store redis(redis_url);  // connects on first use

    // An atom whose value lives in ZooKeeper, created with 0 if new.
    auto counter = client.atom<long>(run + "/counter", 0);
    // An atom whose value lives in Redis, created with 10 if new.
    auto stock = client.atom<long>(run + "/stock", 10, redis);
    std::cout << "atoms " << counter.name() << " (ZooKeeper) and " << stock.name() << " (Redis)\n";

    // swap(f, args...): stores f(value, args...), retrying if another writer got in first.
    std::cout << "swap: counter += 5, twice\n";
    counter.swap([](long value, long delta) { return value + delta; }, 5);
    const long swapped = counter.swap([](long value, long delta) { return value + delta; }, 5);
    expect(swapped == 10 && counter.deref() == 10, "counter is 10");

    // reset: sets the value whatever it was.
    std::cout << "reset: stock = 3\n";
    stock.reset(3);
    expect(*stock == 3, "stock is 3");

    // compare_and_set: only if the value is still the expected one.
    std::cout << "compare_and_set: stock 3 -> 2, then 3 -> 1 again\n";
    expect(stock.compare_and_set(3, 2), "first compare_and_set(3, 2) succeeds");
    expect(!stock.compare_and_set(3, 1), "second compare_and_set(3, 1) fails: stock is 2 now");
    expect(stock.deref() == 2, "stock is 2");

    // A validator (for this handle and its copies) rejects values before they are stored.
    std::cout << "validator: stock never below 0; try to take 5 of 2\n";
    stock.set_validator([](const long& value) { return value >= 0; });
    bool rejected = false;
    try {
      stock.swap([](long value) { return value - 5; });
    } catch (const avout::ValidationError& error) {
      rejected = true;
      std::cout << "  rejected: " << error.what() << "\n";
    }
    expect(rejected && stock.deref() == 2, "the swap was rejected and stock is still 2");

    // A watch runs on the client's callback thread after a change by any process. Changes in
    // quick succession may arrive as one call carrying the newest value.
    std::cout << "watch: another client adds 1 to the counter three times\n";
    std::mutex mutex;
    std::condition_variable changed;
    long seen = counter.deref();
    counter.add_watch("example", [&](const long& old_value, const long& new_value) {
      std::lock_guard lock(mutex);
      std::cout << "  watch: counter " << old_value << " -> " << new_value << "\n";
      seen = new_value;
      changed.notify_all();
    });
    {
      avout::Client other(zookeeper);  // stands for another process
      auto same_counter = other.atom<long>(run + "/counter", 0);
      for (int i = 0; i < 3; ++i) same_counter.swap([](long value) { return value + 1; });
    }
    {
      std::unique_lock lock(mutex);
      changed.wait_for(lock, 30s, [&] { return seen == 13; });
      expect(seen == 13, "the watch saw the counter reach 13");
    }
    counter.remove_watch("example");
    std::cout << "atoms: all results as expected\n";
    return 0;
  } catch (const avout::Error& error) {
    std::cerr << "atoms: " << error.what() << "\n";
    return 1;
  }
}
