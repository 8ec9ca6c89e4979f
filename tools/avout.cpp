// avout: the command line of an avout deployment.
//   avout [options] list atoms|refs|agents|leases|locks
//   avout [options] show atom|ref|agent|lock NAME [--store zookeeper|redis|postgres]
//   avout [options] set atom NAME VALUE [--type long|double|string|bool] [--store ...]
//   avout [options] gc [--grace SECONDS]
//   avout [options] bank [--processes N] [--accounts M] [--seconds S]
// Exit codes: 0 done, 1 failed (unreachable server, bad data), 2 usage, 3 not found.
#include "bank.hpp"
#include "inspect.hpp"

#include <builtin_stores.hpp>

#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace {

struct Connection {
  std::string zookeeper = "127.0.0.1:2181";
  std::string root = "/avout";
  std::string digest;
  std::string redis;
  std::string postgres;

  avout::ClientOptions client_options() const {
    avout::ClientOptions options{.hosts = zookeeper, .connect_timeout = std::chrono::seconds(5),
                                 .root = root};
    if (!digest.empty()) options.digest = digest;
    return options;
  }
};

// The store named on the command line, made by the store registry from the connection's URL.
class StoreChoice {
 public:
  StoreChoice(avout::Client& client, const Connection& connection, const std::string& kind)
      : handle_(make(client, connection, kind)) {}
  avout::Store& get() { return handle_.get(); }

 private:
  static avout::StoreHandle make(avout::Client& client, const Connection& connection,
                                 const std::string& kind) {
    avout::register_builtin_stores();
    if (kind == "zookeeper") return avout::make_store(client, "zookeeper:");
    const std::string* url = kind == "redis" ? &connection.redis : kind == "postgres" ? &connection.postgres : nullptr;
    if (!url) throw CLI::ValidationError("--store", "must be zookeeper, redis or postgres");
    if (url->empty()) throw CLI::ValidationError("--store " + kind, "needs --" + kind + " URL");
    return avout::make_store(client, *url);
  }
  avout::StoreHandle handle_;
};

int set_atom(avout::Client& client, avout::Store& store, const std::string& name,
             const std::string& value, const std::string& type) {
  // The value's type must be the one its users read: the codec refuses a mismatch.
  if (type == "long") client.atom<long>(name, 0, store).reset(std::stol(value));
  else if (type == "double") client.atom<double>(name, 0, store).reset(std::stod(value));
  else if (type == "bool") client.atom<bool>(name, false, store).reset(value == "true" || value == "1");
  else client.atom<std::string>(name, "", store).reset(value);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"avout: inspect and change an avout deployment"};
  app.require_subcommand(1);
  Connection connection;
  app.add_option("--zookeeper", connection.zookeeper, "ZooKeeper host:port[,host:port]");
  app.add_option("--root", connection.root, "avout's root node");
  app.add_option("--digest", connection.digest, "ZooKeeper digest credentials user:password");
  app.add_option("--redis", connection.redis, "Redis store URL tcp://[:password@]host:port");
  app.add_option("--postgres", connection.postgres, "PostgreSQL store URL postgresql://...");

  std::string kind, name, value, type = "long", store = "zookeeper";
  auto* list = app.add_subcommand("list", "list atoms, refs, agents or leases");
  list->add_option("kind", kind, "atoms|refs|agents|leases|locks")->required()
      ->check(CLI::IsMember({"atoms", "refs", "agents", "leases", "locks"}));
  auto* show = app.add_subcommand("show", "show one atom, ref, agent or lock");
  show->add_option("kind", kind, "atom|ref|agent|lock")->required()
      ->check(CLI::IsMember({"atom", "ref", "agent", "lock"}));
  show->add_option("name", name, "its name, e.g. /counter")->required();
  show->add_option("--store", store, "where its values live")->check(CLI::IsMember({"zookeeper", "redis", "postgres"}));
  auto* set = app.add_subcommand("set", "set an atom's value");
  set->add_option("kind", kind, "atom")->required()->check(CLI::IsMember({"atom"}));
  set->add_option("name", name, "its name")->required();
  set->add_option("value", value, "the new value")->required();
  set->add_option("--type", type, "the value's type")->check(CLI::IsMember({"long", "double", "string", "bool"}));
  set->add_option("--store", store, "where its value lives")->check(CLI::IsMember({"zookeeper", "redis", "postgres"}));
  int grace_seconds = 600;
  auto* gc = app.add_subcommand("gc", "erase values no ref references whose writers are dead");
  gc->add_option("--grace", grace_seconds, "keep commit markers younger than this (seconds; at least the commit resolution window, 120 s by default)")->check(CLI::PositiveNumber);
  avout::tool::BankSettings bank;
  auto* bank_command = app.add_subcommand("bank", "transfer between accounts from N processes; print the total");
  bank_command->add_option("--processes", bank.processes)->check(CLI::Range(1, 64));
  bank_command->add_option("--accounts", bank.accounts)->check(CLI::Range(2, 10000));
  bank_command->add_option("--seconds", bank.seconds)->check(CLI::Range(1, 3600));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;
  }
  try {
    if (bank_command->parsed()) {
      bank.client = connection.client_options();
      bank.redis = connection.redis;
      bank.postgres = connection.postgres;
      return avout::tool::run_bank(bank);
    }
    avout::Client client(connection.client_options());
    if (list->parsed()) {
      for (const auto& found : avout::tool::list(client, kind)) std::cout << found << "\n";
      return 0;
    }
    if (gc->parsed()) {
      std::unique_ptr<avout::redis::Store> redis;
      std::unique_ptr<avout::postgres::Store> postgres;
      std::vector<std::reference_wrapper<avout::Store>> stores;
      if (!connection.redis.empty()) stores.emplace_back(*(redis = std::make_unique<avout::redis::Store>(connection.redis)));
      if (!connection.postgres.empty()) stores.emplace_back(*(postgres = std::make_unique<avout::postgres::Store>(connection.postgres)));
      auto report = client.gc(stores, std::chrono::seconds(grace_seconds));
      std::cout << "refs scanned " << report.refs_scanned << ", values erased "
                << report.points_erased << ", markers removed " << report.markers_removed << "\n";
      return 0;
    }
    avout::validate_path(name);  // InvalidName (exit 2) before anything is looked up
    if (kind == "lock") {
      avout::tool::show_lock(client, name, std::cout);
      return 0;
    }
    StoreChoice chosen(client, connection, store);
    if (set->parsed()) return set_atom(client, chosen.get(), name, value, type);
    if (kind == "atom") avout::tool::show_atom(client, chosen.get(), name, std::cout);
    else if (kind == "ref") avout::tool::show_ref(client, chosen.get(), name, std::cout);
    else avout::tool::show_agent(client, chosen.get(), name, std::cout);
    return 0;
  } catch (const CLI::ValidationError& error) {
    std::cerr << "avout: " << error.what() << "\n";
    return 2;
  } catch (const avout::tool::NotFound& error) {
    std::cerr << "avout: " << error.what() << "\n";
    return 3;
  } catch (const avout::InvalidName& error) {
    std::cerr << "avout: " << error.what() << "\n";
    return 2;
  } catch (const std::invalid_argument&) {
    std::cerr << "avout: '" << value << "' is not a " << type << "\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "avout: " << error.what() << "\n";
    return 1;
  }
}
