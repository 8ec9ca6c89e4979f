// Built against an installed avout, with find_package and with pkg-config. It needs no
// server: it makes client options and stores (which connect lazily) and round-trips a value
// through avout's codec. With --connect HOSTS it would also reach a ZooKeeper server: that
// code is never run by the check, but it puts the Client (whose default store, the ZooKeeper
// one, is part of avout_core) and the backends on the link line.
#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>
#include <avout/zookeeper.hpp>

#include <iostream>
#include <map>
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

  if (argc > 2 && std::string(argv[1]) == "--connect") {
    try {
      avout::Client client(options);
      auto counter = client.atom<long>("/counter", 0);  // value in ZooKeeper
      std::cout << "counter: " << counter.swap([](long v) { return v + 1; }) << "\n";
      auto by_url = avout::make_store(client, "redis://127.0.0.1:6379");
      auto in_redis = client.atom<long>("/counter", 0, *by_url);
      auto in_postgres = client.ref<long>("/counter", 0, postgres);
      std::cout << "redis: " << in_redis.deref() << " postgres: " << in_postgres.deref() << "\n";
    } catch (const avout::Error& error) {
      std::cerr << "avout_install_check: " << error.what() << "\n";
      return 1;
    }
  }
  std::cout << "install check OK\n";
  return 0;
}
