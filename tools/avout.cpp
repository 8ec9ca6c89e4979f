// avout: the command line of an avout deployment.
//   avout [options] list atoms|refs|agents|leases|locks|semaphores|elections|barriers|queues
//   avout [options] show atom|ref|agent|lock|semaphore|election|barrier|queue NAME [--store URL]
//   avout [options] set atom NAME VALUE [--type long|double|string|bool] [--store URL]
//   avout [options] watch atom|ref NAME [--count N] [--store URL]
//   avout [options] delete atom|lock NAME [--store URL]
//   avout [options] lock NAME [--kill-after SECONDS] -- COMMAND [ARGUMENTS...]
//   avout [options] elect NAME [--id ID] [--timeout SECONDS] [--kill-after SECONDS] -- COMMAND...
//   avout [options] gc [--grace SECONDS]
//   avout [options] bank [--processes N] [--accounts M] [--seconds S]
// Options: -o json|table, --zookeeper/--digest/--stores (or AVOUT_ZOOKEEPER, AVOUT_DIGEST,
// AVOUT_STORES), --root, --command-timeout SECONDS, --session-timeout SECONDS, --version.
// Stores are named by URL, any scheme the store registry knows (zookeeper:, redis://,
// postgresql://, ...): --store picks the one an object's values live in (default zookeeper:),
// --stores lists the deployment's stores for gc and bank. --redis/--postgres and
// AVOUT_REDIS/AVOUT_POSTGRES are gone: name those stores by their URLs instead.
// Exit codes: 0 done, 1 failed (unreachable server, bad data, timeout), 2 usage, 3 not found;
// `lock` and `elect` exit with their command's status (127: it could not start; 128 + the
// signal when stopped, as after a lost hold); `elect` exits 1 when --timeout passed first.
#include "bank.hpp"
#include "inspect.hpp"
#include "run_locked.hpp"
#include "store_urls.hpp"
#include "typed_value.hpp"
#include "watch.hpp"

#include <avout/version.hpp>

#include <CLI/CLI.hpp>

#include <unistd.h>
#include <csignal>
#include <iostream>
#include <map>

namespace {

struct Connection {
  std::string zookeeper = "127.0.0.1:2181";
  std::string root = "/avout";
  int session_timeout = 10;  ///< seconds
  std::string digest;
  std::vector<std::string> stores;  ///< URLs of the deployment's stores besides zookeeper:

  avout::ClientOptions client_options() const {
    avout::ClientOptions options{.hosts = zookeeper,
                                 .session_timeout = std::chrono::seconds(session_timeout),
                                 .connect_timeout = std::chrono::seconds(5),
                                 .root = root};
    if (!digest.empty()) options.digest = digest;
    return options;
  }
};

// Ends the process when a short command outlives --command-timeout (watch, lock and elect do
// not).
extern "C" void command_timed_out(int) {
  static const char message[] = "avout: command timed out (--command-timeout)\n";
  [[maybe_unused]] auto written = write(STDERR_FILENO, message, sizeof message - 1);
  _exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"avout: inspect and change an avout deployment"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("avout ") + avout::version());
  Connection connection;
  app.add_option("--zookeeper", connection.zookeeper, "ZooKeeper host:port[,host:port][/chroot]")
      ->envname("AVOUT_ZOOKEEPER");
  app.add_option("--root", connection.root, "avout's root node");
  app.add_option("--digest", connection.digest, "ZooKeeper digest credentials user:password")
      ->envname("AVOUT_DIGEST");
  app.add_option("--stores", connection.stores,
                 "URL of a store the deployment keeps values in, for gc and bank (repeatable; "
                 "zookeeper: is "
                 "always one; AVOUT_STORES: URLs separated by spaces or commas). Replaces "
                 "--redis/--postgres")
      ->envname("AVOUT_STORES")
      ->allow_extra_args(false);
  app.add_option("--session-timeout", connection.session_timeout,
                 "ZooKeeper session timeout in seconds: how long a frozen or cut-off `lock` or "
                 "`elect` may go unnoticed before its hold is lost")
      ->check(CLI::Range(1, 600));
  std::string output = "table";
  app.add_option("-o,--output", output, "output format")->check(CLI::IsMember({"json", "table"}));
  int command_timeout = 0;
  app.add_option("--command-timeout", command_timeout,
                 "give up on a command (not watch or lock) after this many seconds; 0: never")
      ->check(CLI::NonNegativeNumber);

  std::string kind, name, value, type, store = "zookeeper:";
  const std::string store_help =
      "URL of the store its values live in: zookeeper: (default), redis://..., "
      "postgresql://... or any registered scheme";
  auto* list = app.add_subcommand("list", "list the names of objects or recipes of one kind");
  list->add_option("kind", kind,
                   "atoms|refs|agents|leases|locks|semaphores|elections|barriers|queues")
      ->required()
      ->check(CLI::IsMember(avout::tool::listed_kinds()));
  auto* show = app.add_subcommand("show", "show one object or recipe");
  show->add_option("kind", kind, "atom|ref|agent|lock|semaphore|election|barrier|queue")
      ->required()
      ->check(CLI::IsMember(
          {"atom", "ref", "agent", "lock", "semaphore", "election", "barrier", "queue"}));
  show->add_option("name", name, "its name, e.g. /counter")->required();
  show->add_option("--store", store, store_help);
  auto* set = app.add_subcommand("set", "set an atom's value");
  set->add_option("kind", kind, "atom")->required()->check(CLI::IsMember({"atom"}));
  set->add_option("name", name, "its name")->required();
  set->add_option("value", value, "the new value")->required();
  set->add_option("--type", type, "the value's type (default: the stored value's, else long)")
      ->check(CLI::IsMember({"long", "double", "string", "bool"}));
  set->add_option("--store", store, store_help);
  std::size_t count = 0;
  auto* watch = app.add_subcommand("watch", "print each new value of an atom or ref until Ctrl-C");
  watch->add_option("kind", kind, "atom|ref")->required()->check(CLI::IsMember({"atom", "ref"}));
  watch->add_option("name", name, "its name")->required();
  watch->add_option("--count", count, "stop after this many values")->check(CLI::PositiveNumber);
  watch->add_option("--store", store, store_help);
  auto* erase = app.add_subcommand("delete", "delete an atom (value in ZooKeeper) or a free lock");
  erase->add_option("kind", kind, "atom|lock (refs and agents cannot be deleted safely)")
      ->required()
      ->check(CLI::IsMember({"atom", "lock"}));
  erase->add_option("name", name, "its name")->required();
  erase->add_option("--store", store, store_help);
  std::vector<std::string> command;
  auto* lock = app.add_subcommand(
      "lock", "run a command while holding a lock; its fencing token is in AVOUT_FENCING_TOKEN");
  lock->add_option("name", name, "the lock's name")->required();
  lock->add_option("command", command, "the command and its arguments, after --")->required();
  int kill_after = 10;
  const std::string kill_after_help =
      "seconds between the SIGTERM of a lost hold and the SIGKILL of a command still running";
  lock->add_option("--kill-after", kill_after, kill_after_help)->check(CLI::NonNegativeNumber);
  auto* elect = app.add_subcommand(
      "elect",
      "campaign in a leader election and run a command while leading; its fencing token is in "
      "AVOUT_FENCING_TOKEN, its id in AVOUT_LEADER_ID");
  elect->add_option("name", name, "the election's name")->required();
  elect->add_option("command", command, "the command and its arguments, after --")->required();
  std::string candidate_id;
  elect->add_option("--id", candidate_id,
                    "the id to campaign with, what `show election` names (default: host:pid)");
  int campaign_timeout = 0;
  elect
      ->add_option("--timeout", campaign_timeout,
                   "give up (exit 1, nothing run) when not leading after this many seconds; "
                   "0: wait forever")
      ->check(CLI::NonNegativeNumber);
  elect->add_option("--kill-after", kill_after, kill_after_help)->check(CLI::NonNegativeNumber);
  int grace_seconds = 600;
  auto* gc = app.add_subcommand(
      "gc",
      "erase values no ref references whose writers are dead, in zookeeper: and the --stores");
  gc->add_option("--grace", grace_seconds,
                 "keep commit markers younger than this (seconds; at least "
                 "ClientOptions::marker_grace, 120 s by default)")
      ->check(CLI::PositiveNumber);
  avout::tool::BankSettings bank;
  auto* bank_command = app.add_subcommand(
      "bank",
      "transfer between accounts in zookeeper: and the --stores from N processes; print the total");
  bank_command->add_option("--processes", bank.processes)->check(CLI::Range(1, 64));
  bank_command->add_option("--accounts", bank.accounts)->check(CLI::Range(2, 10000));
  bank_command->add_option("--seconds", bank.seconds)->check(CLI::Range(1, 3600));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError&) {
    // CLI11's own message echoes the arguments; a stray one may be a store URL with a password.
    std::cerr << "avout: unexpected argument(s):";
    for (const auto& extra : app.remaining(true))
      std::cerr << " " << avout::tool::shown_argument(extra);
    std::cerr << "\nRun with --help for more information.\n";
    return 2;
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;
  }
  const bool json = output == "json";
  try {
    // An unknown scheme is a usage error (exit 2) even when ZooKeeper cannot be reached.
    avout::tool::require_registered_schemes(store, connection.stores);
    if (!name.empty()) avout::validate_path(name);  // InvalidName (exit 2) before connecting
    // A value that does not parse as its type is refused before anything is created.
    std::optional<avout::tool::TypedValue> parsed;
    if (set->parsed() && !type.empty()) parsed = avout::tool::parse_value(value, type);
    auto options = connection.client_options();
    if (command_timeout > 0 && !watch->parsed() && !lock->parsed() && !elect->parsed()) {
      std::signal(SIGALRM, command_timed_out);
      alarm(static_cast<unsigned>(command_timeout));
      options.connect_timeout = std::min<std::chrono::milliseconds>(
          options.connect_timeout, std::chrono::seconds(command_timeout));
    }
    if (bank_command->parsed()) {
      bank.client = options;
      bank.stores = avout::tool::split_store_urls(connection.stores);
      return avout::tool::run_bank(bank);
    }
    // watch waits for SIGINT with sigwait: block it before any thread exists so all inherit it.
    if (watch->parsed()) avout::tool::block_interrupts();
    avout::Client client(options);
    if (list->parsed()) {
      const auto names = avout::tool::list(client, kind);
      if (json)
        std::cout << nlohmann::json(names).dump() << "\n";
      else
        for (const auto& found : names) std::cout << found << "\n";
      return 0;
    }
    if (gc->parsed()) {
      const auto handles =
          avout::tool::deployment_stores(client, avout::tool::split_store_urls(connection.stores));
      std::vector<std::reference_wrapper<avout::Store>>
          stores;  // gc sweeps the client's own store anyway
      for (const auto& handle : handles) {
        if (&handle.get() != &client.default_store()) stores.emplace_back(handle.get());
      }
      auto report = client.gc(stores, std::chrono::seconds(grace_seconds));
      if (json) {
        std::cout << nlohmann::ordered_json{{"refs_scanned", report.refs_scanned},
                                            {"values_erased", report.points_erased},
                                            {"markers_removed", report.markers_removed}}
                         .dump()
                  << "\n";
      } else {
        std::cout << "refs scanned " << report.refs_scanned << ", values erased "
                  << report.points_erased << ", markers removed " << report.markers_removed << "\n";
      }
      return 0;
    }
    if (lock->parsed())
      return avout::tool::run_locked(client, name, command, std::chrono::seconds(kill_after));
    if (elect->parsed()) {
      const auto deadline = campaign_timeout > 0
                                ? avout::Deadline::after(std::chrono::seconds(campaign_timeout))
                                : avout::Deadline{};
      return avout::tool::run_elected(
          client, name, candidate_id.empty() ? avout::tool::default_candidate_id() : candidate_id,
          deadline, command, std::chrono::seconds(kill_after));
    }
    if (show->parsed() && kind != "atom" && kind != "ref" && kind != "agent" && kind != "lock") {
      using Show = avout::tool::Report (*)(avout::Client&, const std::string&);
      static const std::map<std::string, Show> recipes{{"semaphore", avout::tool::show_semaphore},
                                                       {"election", avout::tool::show_election},
                                                       {"barrier", avout::tool::show_barrier},
                                                       {"queue", avout::tool::show_queue}};
      avout::tool::print(recipes.at(kind)(client, name), json, std::cout);
      return 0;
    }
    if (kind == "lock") {
      if (erase->parsed())
        std::cout << avout::tool::delete_lock(client, name) << "\n";
      else
        avout::tool::print(avout::tool::show_lock(client, name), json, std::cout);
      return 0;
    }
    const auto chosen = avout::tool::store_from_url(client, store);
    if (set->parsed()) {
      auto stored = avout::tool::stored_atom_value(client, chosen.get(), name);
      if (!parsed)
        parsed = avout::tool::parse_value(value, stored ? avout::tool::type_of(*stored) : "long");
      avout::tool::set_atom(client, chosen.get(), name, *parsed, stored);
      return 0;
    }
    if (watch->parsed())
      return avout::tool::watch(client, chosen.get(), kind, name, count, json, std::cout);
    if (erase->parsed()) {
      std::cout << avout::tool::delete_atom(client, chosen.get(), name) << "\n";
      return 0;
    }
    if (kind == "atom")
      avout::tool::print(avout::tool::show_atom(client, chosen.get(), name), json, std::cout);
    else if (kind == "ref")
      avout::tool::print(avout::tool::show_ref(client, chosen.get(), name), json, std::cout);
    else
      avout::tool::print(avout::tool::show_agent(client, chosen.get(), name), json, std::cout);
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
