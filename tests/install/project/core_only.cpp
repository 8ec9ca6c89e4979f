// Built with `pkg-config --cflags --libs avout` alone: a user of ZooKeeper-held values only
// needs neither hiredis nor libpqxx. It also catches the core's errors by their type.
#include "caught_by_type.hpp"

#include <avout/avout.hpp>
#include <avout/zookeeper.hpp>

#include <iostream>
#include <string>

int main(int argc, char** argv) {
  avout::ClientOptions options{.hosts = "127.0.0.1:2181", .root = "/install-check"};
  if (argc > 2 && std::string(argv[1]) == "--connect") {
    // Never run by the check; it puts the Client and its ZooKeeper store on the link line.
    avout::Client client(options);
    std::cout << "counter: " << client.atom<long>("/counter", 0).swap([](long v) { return v + 1; })
              << "\n";
  }
  if (!core_errors_caught_by_type()) return 1;
  std::cout << "zookeeper node limit: " << avout::zookeeper::max_node_value << "\n";
  // The headers' version and the linked library's agree (both from <avout/version.hpp>).
  if (std::string(avout::version()) != AVOUT_VERSION_STRING) {
    std::cout << "library version " << avout::version() << ", headers " << AVOUT_VERSION_STRING
              << "\n";
    return 1;
  }
  std::cout << "install check OK\n";
  return 0;
}
