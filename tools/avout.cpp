// avout: the command line of an avout deployment.
//   avout [options] list atoms|refs|agents|leases|locks|semaphores|elections|barriers|queues
//         [--prefix PATH]
//   avout [options] get atom|ref|agent NAME [--store URL]
//   avout [options] show atom|ref|agent|lock|semaphore|election|barrier|queue NAME [--store URL]
//   avout [options] set atom NAME VALUE [--type long|double|string|bool] [--store URL]
//   avout [options] watch atom|ref NAME [--count N] [--store URL]
//   avout [options] delete atom|lock NAME [--store URL]
//   avout [options] lock NAME [--kill-after DURATION] -- COMMAND [ARGUMENTS...]
//   avout [options] elect NAME [--id ID] [--timeout DURATION] [--kill-after DURATION] -- COMMAND...
//   avout [options] gc [--grace DURATION]
//   avout [options] bank [--processes N] [--accounts M] [--seconds DURATION]
//   avout help [COMMAND]
// Options: -o json|table, -v (repeatable), --zookeeper/--digest/--stores (or AVOUT_ZOOKEEPER,
// AVOUT_DIGEST, AVOUT_STORES), --root, --command-timeout, --session-timeout, --connect-timeout,
// --version. Durations take ms, s, m or h (tools/duration.hpp); a bare number is seconds.
// Stores are named by URL, any scheme the store registry knows (zookeeper:, redis://,
// postgresql://, ...): --store picks the one an object's values live in (default zookeeper:),
// --stores lists the deployment's stores for gc and bank. --redis/--postgres and
// AVOUT_REDIS/AVOUT_POSTGRES are gone: name those stores by their URLs instead.
// Exit codes: 0 done, 1 failed (unreachable server, bad data, timeout), 2 usage, 3 not found;
// `lock` and `elect` exit with their command's status (127: it could not start; 128 + the
// signal when stopped, as after a lost hold); `elect` exits 1 when --timeout passed first.
#include "bank.hpp"
#include "duration.hpp"
#include "inspect.hpp"
#include "json_value.hpp"
#include "run_locked.hpp"
#include "store_urls.hpp"
#include "typed_value.hpp"
#include "verbosity.hpp"
#include "watch.hpp"

#include <avout/version.hpp>

#include <CLI/CLI.hpp>

#include <sys/time.h>
#include <unistd.h>
#include <csignal>
#include <iostream>
#include <map>
#include <memory>

namespace {

struct Connection {
  std::string zookeeper = "127.0.0.1:2181";
  std::string root = "/avout";
  std::chrono::milliseconds session_timeout = std::chrono::seconds(10);
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(5);
  std::string digest;
  std::vector<std::string> stores;  ///< URLs of the deployment's stores besides zookeeper:
  int verbosity = 0;                ///< -v flags: how much of the library's log to print

  avout::ClientOptions client_options() const {
    avout::ClientOptions options{.hosts = zookeeper,
                                 .session_timeout = session_timeout,
                                 .connect_timeout = connect_timeout,
                                 .root = root,
                                 .logger = avout::tool::logger_for(verbosity)};
    if (!digest.empty()) options.digest = digest;
    return options;
  }
};

// ZooKeeper digest credentials: user:password, both non-empty. The value is not echoed: it
// holds a password.
const CLI::Validator digest_credentials(
    [](std::string& text) {
      const auto colon = text.find(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
        return std::string("expected user:password, both non-empty");
      return std::string();
    },
    "USER:PASSWORD");

// Arms SIGALRM to fire once `after` has passed (millisecond precision, unlike alarm()).
void arm_alarm(std::chrono::milliseconds after) {
  itimerval timer{};
  timer.it_value.tv_sec = static_cast<time_t>(after.count() / 1000);
  timer.it_value.tv_usec = static_cast<suseconds_t>(after.count() % 1000 * 1000);
  setitimer(ITIMER_REAL, &timer, nullptr);
}

// Ends the process when a short command outlives --command-timeout (watch, lock and elect do
// not).
extern "C" void command_timed_out(int) {
  static const char message[] = "avout: command timed out (--command-timeout)\n";
  [[maybe_unused]] auto written = write(STDERR_FILENO, message, sizeof message - 1);
  _exit(1);
}

// The client, or one line saying ZooKeeper could not be reached (the client's own log of the
// attempts is printed with -v only).
std::unique_ptr<avout::Client> connect(const avout::ClientOptions& options) {
  try {
    return std::make_unique<avout::Client>(options);
  } catch (const avout::ConnectionLoss&) {
    throw avout::ConnectionLoss("cannot reach ZooKeeper at " + options.hosts + " within " +
                                avout::tool::format_duration(options.connect_timeout) +
                                " (-v shows the client's log)");
  }
}

}  // namespace

int main(int argc, char** argv) {
  using avout::tool::DurationLimits;
  using std::chrono::milliseconds;
  CLI::App app{"avout: inspect and change an avout deployment"};
  app.require_subcommand(1);
  app.option_defaults()->always_capture_default();  // help shows every default
  app.set_version_flag("--version", std::string("avout ") + avout::version());
  Connection connection;
  app.add_option("--zookeeper", connection.zookeeper, "ZooKeeper host:port[,host:port][/chroot]")
      ->envname("AVOUT_ZOOKEEPER");
  app.add_option("--root", connection.root, "avout's root node");
  app.add_option("--digest", connection.digest,
                 "ZooKeeper digest credentials user:password (both non-empty)")
      ->envname("AVOUT_DIGEST")
      ->check(digest_credentials)
      ->default_str("");
  app.add_option("--stores", connection.stores,
                 "URL of a store the deployment keeps values in, for gc and bank (repeatable; "
                 "zookeeper: is "
                 "always one; AVOUT_STORES: URLs separated by spaces or commas). Replaces "
                 "--redis/--postgres")
      ->envname("AVOUT_STORES")
      ->allow_extra_args(false)
      ->default_str("");
  avout::tool::add_duration_option(
      app, "--session-timeout", connection.session_timeout,
      DurationLimits{.least = std::chrono::seconds(1), .most = std::chrono::minutes(10)},
      "ZooKeeper session timeout: how long a frozen or cut-off `lock` or `elect` may go "
      "unnoticed before its hold is lost");
  avout::tool::add_duration_option(
      app, "--connect-timeout", connection.connect_timeout,
      DurationLimits{.least = milliseconds(100), .most = std::chrono::minutes(10)},
      "give up when no ZooKeeper session is made within this (exit 1)");
  app.add_flag("-v,--verbose", connection.verbosity,
               "print the library's and the ZooKeeper client's log to stderr: -v warnings and "
               "errors, -vv also info, -vvv also debug (default: nothing)");
  std::string output = "table";
  app.add_option("-o,--output", output, "output format")->check(CLI::IsMember({"json", "table"}));
  milliseconds command_timeout{0};
  avout::tool::add_duration_option(
      app, "--command-timeout", command_timeout, DurationLimits{},
      "give up on a command (not watch, lock or elect) after this long (exit 1); 0: never");

  std::string kind, name, value, type, store = "zookeeper:", prefix;
  const std::string store_help =
      "URL of the store its values live in: zookeeper:, redis://..., postgresql://... or any "
      "registered scheme";
  auto* help = app.add_subcommand("help", "print this help, or a command's");
  std::string help_topic;
  help->add_option("command", help_topic, "the command to explain");
  auto* list = app.add_subcommand("list", "list the names of objects or recipes of one kind");
  list->add_option("kind", kind,
                   "atoms|refs|agents|leases|locks|semaphores|elections|barriers|queues")
      ->required()
      ->check(CLI::IsMember(avout::tool::listed_kinds()));
  list->add_option("--prefix", prefix, "only this name and the names below it, e.g. /jobs");
  auto* get = app.add_subcommand("get", "print the value of an atom, ref or agent alone");
  get->add_option("kind", kind, "atom|ref|agent")
      ->required()
      ->check(CLI::IsMember({"atom", "ref", "agent"}));
  get->add_option("name", name, "its name, e.g. /counter")->required();
  get->add_option("--store", store, store_help);
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
  watch->add_option("--count", count, "stop after this many values (0: no limit)")
      ->check(CLI::NonNegativeNumber);
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
  lock->add_option("command", command, "the command and its arguments, after --")
      ->required()
      ->default_str("");
  milliseconds kill_after = std::chrono::seconds(10);
  const DurationLimits kill_after_limits{.most = std::chrono::hours(1)};
  const std::string kill_after_help =
      "time between the SIGTERM of a lost hold and the SIGKILL of a command still running";
  avout::tool::add_duration_option(*lock, "--kill-after", kill_after, kill_after_limits,
                                   kill_after_help);
  auto* elect = app.add_subcommand(
      "elect",
      "campaign in a leader election and run a command while leading; its fencing token is in "
      "AVOUT_FENCING_TOKEN, its id in AVOUT_LEADER_ID");
  elect->add_option("name", name, "the election's name")->required();
  elect->add_option("command", command, "the command and its arguments, after --")
      ->required()
      ->default_str("");
  std::string candidate_id;
  elect
      ->add_option("--id", candidate_id,
                   "the id to campaign with, what `show election` names (default: host:pid)")
      ->default_str("");
  milliseconds campaign_timeout{0};
  avout::tool::add_duration_option(
      *elect, "--timeout", campaign_timeout, DurationLimits{},
      "give up (exit 1, nothing run) when not leading after this long; 0: wait forever");
  avout::tool::add_duration_option(*elect, "--kill-after", kill_after, kill_after_limits,
                                   kill_after_help);
  milliseconds grace = std::chrono::minutes(10);
  auto* gc = app.add_subcommand(
      "gc",
      "erase values no ref references whose writers are dead, in zookeeper: and the --stores");
  avout::tool::add_duration_option(
      *gc, "--grace", grace,
      DurationLimits{.least = std::chrono::seconds(1), .most = std::chrono::hours(24 * 365)},
      "keep commit markers younger than this (at least ClientOptions::marker_grace, 2m by "
      "default)");
  avout::tool::BankSettings bank;
  auto* bank_command = app.add_subcommand(
      "bank",
      "transfer between accounts in zookeeper: and the --stores from N processes; print the total");
  bank_command->add_option("--processes", bank.processes, "transferring processes")
      ->check(CLI::Range(1, 64));
  bank_command
      ->add_option("--accounts", bank.accounts,
                   "accounts, spread round-robin over zookeeper: and the --stores")
      ->check(CLI::Range(2, 10000));
  avout::tool::add_duration_option(
      *bank_command, "--seconds", bank.duration,
      DurationLimits{.least = std::chrono::seconds(1), .most = std::chrono::hours(1)},
      "how long the processes transfer (a total is printed each second)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError&) {
    // CLI11's own message echoes the arguments; a stray one may be a store URL with a password.
    std::cerr << "avout: unexpected argument(s):";
    for (const auto& extra : app.remaining(true))
      std::cerr << " " << avout::tool::shown_argument(extra);
    std::cerr << "\nRun with --help for more information.\n";
    return 2;
  } catch (const CLI::ValidationError& error) {
    // One line naming the option (a bad duration, digest, kind...); no value of --digest.
    std::cerr << "avout: " << error.what() << "\n";
    return 2;
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;
  }
  if (help->parsed()) {
    if (help_topic.empty()) {
      // app.help() would explain the selected subcommand, `help` itself.
      std::cout << app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal);
      return 0;
    }
    try {
      const auto* topic = app.get_subcommand(help_topic);
      if (topic == help) throw CLI::OptionNotFound(help_topic);
      std::cout << topic->help(app.get_name());
      return 0;
    } catch (const CLI::OptionNotFound&) {
      std::cerr << "avout: no command '" << help_topic << "'; run avout help\n";
      return 2;
    }
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
    if (command_timeout.count() > 0 && !watch->parsed() && !lock->parsed() && !elect->parsed()) {
      std::signal(SIGALRM, command_timed_out);
      arm_alarm(command_timeout);
      options.connect_timeout = std::min(options.connect_timeout, command_timeout);
    }
    if (bank_command->parsed()) {
      bank.client = options;
      bank.stores = avout::tool::split_store_urls(connection.stores);
      return avout::tool::run_bank(bank);
    }
    // watch waits for SIGINT with sigwait: block it before any thread exists so all inherit it.
    if (watch->parsed()) avout::tool::block_interrupts();
    if (list->parsed() && !prefix.empty()) avout::validate_path(prefix);
    auto connected = connect(options);
    avout::Client& client = *connected;
    if (list->parsed()) {
      const auto names = avout::tool::list(client, kind, prefix);
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
      auto report = client.gc(stores, grace);
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
    if (lock->parsed()) return avout::tool::run_locked(client, name, command, kill_after);
    if (elect->parsed()) {
      const auto deadline = campaign_timeout.count() > 0 ? avout::Deadline::after(campaign_timeout)
                                                         : avout::Deadline{};
      return avout::tool::run_elected(
          client, name, candidate_id.empty() ? avout::tool::default_candidate_id() : candidate_id,
          deadline, command, kill_after);
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
    if (get->parsed()) {
      const auto encoded = kind == "atom"  ? avout::tool::atom_value(client, chosen.get(), name)
                           : kind == "ref" ? avout::tool::ref_value(client, chosen.get(), name)
                                           : avout::tool::agent_value(client, chosen.get(), name);
      const auto typed = avout::tool::json_value(encoded);
      std::cout << (json ? avout::tool::dump_line(typed.value)
                         : avout::tool::plain_text(typed.value))
                << "\n";
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
