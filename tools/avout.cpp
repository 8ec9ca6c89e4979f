// avout: the command line of an avout deployment.
//   avout [options] list atoms|refs|agents|leases|locks
//   avout [options] show atom|ref|agent|lock NAME [--store zookeeper|redis|postgres]
//   avout [options] set atom NAME VALUE [--type long|double|string|bool] [--store ...]
//   avout [options] watch atom|ref NAME [--count N] [--store ...]
//   avout [options] delete atom|lock NAME [--store ...]
//   avout [options] lock NAME -- COMMAND [ARGUMENTS...]
//   avout [options] gc [--grace SECONDS]
//   avout [options] bank [--processes N] [--accounts M] [--seconds S]
// Options: -o json|table, --zookeeper/--redis/--postgres/--digest (or AVOUT_ZOOKEEPER,
// AVOUT_REDIS, AVOUT_POSTGRES, AVOUT_DIGEST), --root, --command-timeout SECONDS, --version.
// Exit codes: 0 done, 1 failed (unreachable server, bad data, timeout), 2 usage, 3 not found;
// `lock` exits with its command's status.
#include "bank.hpp"
#include "inspect.hpp"
#include "run_locked.hpp"
#include "typed_value.hpp"
#include "watch.hpp"

#include <builtin_stores.hpp>

#include <avout/postgres.hpp>
#include <avout/redis.hpp>

#include <CLI/CLI.hpp>

#include <csignal>
#include <iostream>
#include <memory>
#include <unistd.h>

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

// Ends the process when a short command outlives --command-timeout (watch and lock do not).
extern "C" void command_timed_out(int) {
  static const char message[] = "avout: command timed out (--command-timeout)\n";
  [[maybe_unused]] auto written = write(STDERR_FILENO, message, sizeof message - 1);
  _exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"avout: inspect and change an avout deployment"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("avout ") + AVOUT_VERSION);
  Connection connection;
  app.add_option("--zookeeper", connection.zookeeper, "ZooKeeper host:port[,host:port]")->envname("AVOUT_ZOOKEEPER");
  app.add_option("--root", connection.root, "avout's root node");
  app.add_option("--digest", connection.digest, "ZooKeeper digest credentials user:password")->envname("AVOUT_DIGEST");
  app.add_option("--redis", connection.redis, "Redis store URL tcp://[:password@]host:port")->envname("AVOUT_REDIS");
  app.add_option("--postgres", connection.postgres, "PostgreSQL store URL postgresql://...")->envname("AVOUT_POSTGRES");
  std::string output = "table";
  app.add_option("-o,--output", output, "output format")->check(CLI::IsMember({"json", "table"}));
  int command_timeout = 0;
  app.add_option("--command-timeout", command_timeout, "give up on a command (not watch or lock) after this many seconds; 0: never")
      ->check(CLI::NonNegativeNumber);

  std::string kind, name, value, type, store = "zookeeper";
  const auto stores = CLI::IsMember({"zookeeper", "redis", "postgres"});
  auto* list = app.add_subcommand("list", "list atoms, refs, agents or leases");
  list->add_option("kind", kind, "atoms|refs|agents|leases|locks")->required()
      ->check(CLI::IsMember({"atoms", "refs", "agents", "leases", "locks"}));
  auto* show = app.add_subcommand("show", "show one atom, ref, agent or lock");
  show->add_option("kind", kind, "atom|ref|agent|lock")->required()
      ->check(CLI::IsMember({"atom", "ref", "agent", "lock"}));
  show->add_option("name", name, "its name, e.g. /counter")->required();
  show->add_option("--store", store, "where its values live")->check(stores);
  auto* set = app.add_subcommand("set", "set an atom's value");
  set->add_option("kind", kind, "atom")->required()->check(CLI::IsMember({"atom"}));
  set->add_option("name", name, "its name")->required();
  set->add_option("value", value, "the new value")->required();
  set->add_option("--type", type, "the value's type (default: the stored value's, else long)")
      ->check(CLI::IsMember({"long", "double", "string", "bool"}));
  set->add_option("--store", store, "where its value lives")->check(stores);
  std::size_t count = 0;
  auto* watch = app.add_subcommand("watch", "print each new value of an atom or ref until Ctrl-C");
  watch->add_option("kind", kind, "atom|ref")->required()->check(CLI::IsMember({"atom", "ref"}));
  watch->add_option("name", name, "its name")->required();
  watch->add_option("--count", count, "stop after this many values")->check(CLI::PositiveNumber);
  watch->add_option("--store", store, "where its values live")->check(stores);
  auto* erase = app.add_subcommand("delete", "delete an atom (value in ZooKeeper) or a free lock");
  erase->add_option("kind", kind, "atom|lock (refs and agents cannot be deleted safely)")->required()
      ->check(CLI::IsMember({"atom", "lock"}));
  erase->add_option("name", name, "its name")->required();
  erase->add_option("--store", store, "where its value lives")->check(stores);
  std::vector<std::string> command;
  auto* lock = app.add_subcommand("lock", "run a command while holding a lock; its fencing token is in AVOUT_FENCING_TOKEN");
  lock->add_option("name", name, "the lock's name")->required();
  lock->add_option("command", command, "the command and its arguments, after --")->required();
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
  const bool json = output == "json";
  try {
    if (bank_command->parsed()) {
      bank.client = connection.client_options();
      bank.redis = connection.redis;
      bank.postgres = connection.postgres;
      return avout::tool::run_bank(bank);
    }
    if (!name.empty()) avout::validate_path(name);  // InvalidName (exit 2) before connecting
    // A value that does not parse as its type is refused before anything is created.
    std::optional<avout::tool::TypedValue> parsed;
    if (set->parsed() && !type.empty()) parsed = avout::tool::parse_value(value, type);
    auto options = connection.client_options();
    if (command_timeout > 0 && !watch->parsed() && !lock->parsed()) {
      std::signal(SIGALRM, command_timed_out);
      alarm(static_cast<unsigned>(command_timeout));
      options.connect_timeout = std::min<std::chrono::milliseconds>(options.connect_timeout,
                                                                    std::chrono::seconds(command_timeout));
    }
    // watch waits for SIGINT with sigwait: block it before any thread exists so all inherit it.
    if (watch->parsed()) avout::tool::block_interrupts();
    avout::Client client(options);
    if (list->parsed()) {
      const auto names = avout::tool::list(client, kind);
      if (json) std::cout << nlohmann::json(names).dump() << "\n";
      else for (const auto& found : names) std::cout << found << "\n";
      return 0;
    }
    if (gc->parsed()) {
      std::unique_ptr<avout::redis::Store> redis;
      std::unique_ptr<avout::postgres::Store> postgres;
      std::vector<std::reference_wrapper<avout::Store>> stores;
      if (!connection.redis.empty()) stores.emplace_back(*(redis = std::make_unique<avout::redis::Store>(connection.redis)));
      if (!connection.postgres.empty()) stores.emplace_back(*(postgres = std::make_unique<avout::postgres::Store>(connection.postgres)));
      auto report = client.gc(stores, std::chrono::seconds(grace_seconds));
      if (json) {
        std::cout << nlohmann::ordered_json{{"refs_scanned", report.refs_scanned},
                                            {"values_erased", report.points_erased},
                                            {"markers_removed", report.markers_removed}}.dump() << "\n";
      } else {
        std::cout << "refs scanned " << report.refs_scanned << ", values erased "
                  << report.points_erased << ", markers removed " << report.markers_removed << "\n";
      }
      return 0;
    }
    if (lock->parsed()) return avout::tool::run_locked(client, name, command);
    if (kind == "lock") {
      if (erase->parsed()) std::cout << avout::tool::delete_lock(client, name) << "\n";
      else avout::tool::print(avout::tool::show_lock(client, name), json, std::cout);
      return 0;
    }
    StoreChoice chosen(client, connection, store);
    if (set->parsed()) {
      auto stored = avout::tool::stored_atom_value(client, chosen.get(), name);
      if (!parsed) parsed = avout::tool::parse_value(value, stored ? avout::tool::type_of(*stored) : "long");
      avout::tool::set_atom(client, chosen.get(), name, *parsed, stored);
      return 0;
    }
    if (watch->parsed()) return avout::tool::watch(client, chosen.get(), kind, name, count, json, std::cout);
    if (erase->parsed()) {
      std::cout << avout::tool::delete_atom(client, chosen.get(), name) << "\n";
      return 0;
    }
    if (kind == "atom") avout::tool::print(avout::tool::show_atom(client, chosen.get(), name), json, std::cout);
    else if (kind == "ref") avout::tool::print(avout::tool::show_ref(client, chosen.get(), name), json, std::cout);
    else avout::tool::print(avout::tool::show_agent(client, chosen.get(), name), json, std::cout);
    return 0;
  } catch (const CLI::ValidationError& error) {
    std::cerr << "avout: " << error.what() << "\n";
    return 2;
  } catch (const avout::tool::NotFound& error) {
    std::cerr << "avout: " << error.what() << "\n";
    return 3;
  } catch (const avout::tool::BadValue& error) {
    std::cerr << "avout: " << error.what() << "\n";
    return 2;
  } catch (const avout::InvalidName& error) {
    std::cerr << "avout: " << error.what() << "\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "avout: " << error.what() << "\n";
    return 1;
  }
}
