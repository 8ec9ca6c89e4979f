// Built against an installed avout, with find_package and with pkg-config. It needs no
// server: it makes client options and stores (which connect lazily), round-trips a value
// through avout's codec and catches errors thrown inside each library by their type. With
// --connect HOSTS it would also reach a ZooKeeper server: that code is never run by the check,
// but it puts the Client (whose default store, the ZooKeeper one, is part of avout_core), each
// kind of object and recipe, and the backends on the link line (a symbol a shared library
// does not export fails the link).
#include "caught_by_type.hpp"

#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>
#include <avout/zookeeper.hpp>

#include <chrono>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  avout::ClientOptions options{.hosts = "127.0.0.1:2181", .root = "/install-check"};
  if (argc > 2 && std::string(argv[1]) == "--connect") options.hosts = argv[2];

  const std::map<std::string, std::vector<long>> value{{"a", {1, 2, 3}}, {"b", {}}};
  const avout::Bytes bytes = avout::encode(value);
  const auto back = avout::decode<std::map<std::string, std::vector<long>>>(bytes);
  if (back != value) {
    std::cerr << "decode(encode(value)) differs from value\n";
    return 1;
  }
  std::cout << "options: hosts=" << options.hosts << " root=" << options.root
            << " max_history=" << options.max_history << "\n";
  std::cout << "value: " << avout::codec::describe(bytes) << " (" << bytes.size() << " bytes)\n";
  std::cout << "zookeeper node limit: " << avout::zookeeper::max_node_value << "\n";

  avout::redis::Store redis("tcp://127.0.0.1:6379");                      // connects lazily
  avout::postgres::Store postgres("postgresql://avout@127.0.0.1/avout");  // connects lazily
  std::cout << "stores: " << redis.description() << " | " << postgres.description() << "\n";
  // Each backend registers its URL schemes by a call of its own (static and shared alike).
  avout::redis::register_store_schemes();
  avout::postgres::register_store_schemes();
  std::cout << "schemes:";
  for (const auto& scheme : avout::store_schemes()) std::cout << " " << scheme;
  std::cout << "\n";

  // Errors of the core and of each backend library (bad URLs, refused before connecting).
  const bool caught =
      core_errors_caught_by_type() &&
      caught_by_type<avout::InvalidName>("avout::InvalidName", "avout::redis::Store",
                                         [] { avout::redis::Store store("bogus://x"); }) &&
      caught_by_type<avout::InvalidName>("avout::InvalidName", "avout::postgres::Store", [] {
        avout::postgres::Store store(avout::postgres::StoreOptions{.table_prefix = "bad-prefix!"});
      });
  if (!caught) return 1;

  if (argc > 2 && std::string(argv[1]) == "--connect") {
    try {
      avout::Client client(options);
      auto counter = client.atom<long>("/counter", 0);  // value in ZooKeeper
      std::cout << "counter: " << counter.swap([](long v) { return v + 1; }) << "\n";
      auto by_url = avout::make_store(client, "redis://127.0.0.1:6379");
      auto in_redis = client.atom<long>("/counter", 0, *by_url);
      auto in_postgres = client.ref<long>("/counter", 0, postgres);
      std::cout << "redis: " << in_redis.deref() << " postgres: " << in_postgres.deref() << "\n";
      // A transaction over refs of two stores, guarded by a lock.
      auto lock = client.lock("/install-check");
      std::lock_guard held(lock);
      auto text = client.ref<std::string>("/text", "");
      client.dosync(avout::guarded_by(lock), [&] {
        text.alter([](const std::string& t) { return t + "x"; });
        in_postgres.commute([](long v) { return v + 1; });
      });
      const auto [now_text, now_count] = avout::deref_all(text, in_postgres);
      std::cout << "text: " << now_text << " count: " << now_count << "\n";
      // An agent with a named action, the recipes, a lease and a look at the deployment.
      auto agent = client.agent<long>("/agent", 0);
      agent.define("add", [](long v, long by) { return v + by; });
      agent.send("add", 2L);
      agent.await(avout::Deadline::after(std::chrono::seconds(10)));
      auto rw = client.read_write_lock("/rw");
      rw.lock_shared();
      rw.unlock_shared();
      auto permit = client.semaphore("/permits", 2).acquire();
      std::cout << "permit token: " << permit.fencing_token() << "\n";
      auto election = client.leader_election("/leader", "install-check");
      election.campaign();
      election.resign();
      auto queue = client.work_queue<std::string>("/queue");
      queue.put("item");
      std::cout << "taken: " << queue.take() << "\n";
      auto barrier = client.barrier("/barrier", 1);
      barrier.enter();
      barrier.leave();
      auto lease = client.lease_lock("/lease").lock("key");
      client.lease_lock("/lease").unlock(lease);
      auto redis_lease = avout::redis::lease_lock(redis, "/lease");
      std::cout << "lease: " << redis_lease.description() << "\n";
      std::cout << "atoms: " << avout::inspect::names(client, avout::inspect::Kind::atoms).size()
                << " erased: " << client.gc({std::ref(postgres)}).points_erased << "\n";
    } catch (const avout::Error& error) {
      std::cerr << "avout_install_check: " << error.what() << "\n";
      return 1;
    }
  }
  std::cout << "install check OK\n";
  return 0;
}
