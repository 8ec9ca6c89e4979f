// Servers warmed before anything is measured. ZooKeeper runs on a JVM that compiles its hot
// paths only after they have run a while: from a fresh server, a read-write transaction over
// one ref took 3.1 ms in its first 300 runs, 1.9 in the next 300 and about 1.0-1.2 from the
// third second on, a plain get 0.65 ms falling to 0.2-0.3. Unwarmed, the floors (measured
// first) and the first workloads would pay for the compiler, and later rows would not.
#include "workloads.hpp"

#include <chrono>
#include <cstdio>

namespace avout::bench {

void warm_up_servers(const Settings& settings, const Servers& servers) {
  Stores stores(servers);
  const std::string prefix = "/bench-warm-up";
  std::vector<Ref<long>> refs;
  for (std::size_t i = 0; i < stores.handles.size(); ++i) {
    refs.push_back(
        stores.client.ref<long>(prefix + "/ref-" + std::to_string(i), 0, *stores.handles[i]));
  }
  auto& session = stores.client.session();
  session.create_recursive(prefix + "/node");
  const Bytes data(8, 1);
  const auto before = session.statistics();
  const auto start = std::chrono::steady_clock::now();
  long rounds = 0;
  // The request kinds the floors and the workloads send: transactions (sync, exists, watched
  // gets, multis of creates, sets, checks and deletes, every store's writes), plain gets and
  // versioned sets.
  while (std::chrono::steady_clock::now() - start < settings.warm_up()) {
    stores.client.dosync([&] {
      for (auto& ref : refs) ref.alter([](long v) { return v + 1; });
    });
    const auto node = session.get(prefix + "/node");
    session.set(prefix + "/node", data, node.stat.version);
    ++rounds;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "(warm-up: %ld transactions over every store and %llu ZooKeeper requests in %.1f s, before "
      "anything is measured)\n",
      rounds, static_cast<unsigned long long>(session.statistics().requests - before.requests),
      seconds);
}

}  // namespace avout::bench
