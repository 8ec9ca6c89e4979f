// avout: the command line of an avout deployment.
//   avout [options] list atoms|refs|agents|leases|locks|semaphores|elections|barriers|queues
//         [--prefix PATH]
//   avout [options] get atom|ref|agent NAME [--store URL]
//   avout [options] show atom|ref|agent|lock|semaphore|election|barrier|queue NAME [--store URL]
//   avout [options] set atom NAME VALUE [--type long|double|string|bool] [--store URL]
//   avout [options] watch atom|ref NAME [--count N] [--store URL]
//   avout [options] delete atom|ref|agent|lock|rwlock|lease NAME [--store URL]
//   avout [options] lock NAME [--kill-after DURATION] -- COMMAND [ARGUMENTS...]
//   avout [options] elect NAME [--id ID] [--timeout DURATION] [--kill-after DURATION] -- COMMAND...
//   avout [options] gc [--grace DURATION]
//   avout [options] bank [--processes N] [--accounts M] [--seconds DURATION]
//   avout help [COMMAND]
// Options: -o json|table, -v (repeatable), --zookeeper/--digest/--stores (or AVOUT_ZOOKEEPER,
// AVOUT_DIGEST, AVOUT_STORES), --root, --command-timeout, --session-timeout, --connect-timeout,
// --version. Durations take ms, s, m or h (tools/duration.hpp); a bare number is seconds.
// Stores are named by URL, any scheme the store registry knows (zookeeper:, redis://,
// postgresql://, ...): --stores lists the deployment's stores (for gc and bank, and for
// get/show/set/watch/delete, which take an atom's, ref's or agent's store from the record
// ZooKeeper keeps of it, matching its scheme and name= to a --stores URL; zookeeper: is always
// known). --store still picks one (it must match the record; without a record, default
// zookeeper:). --redis/--postgres and AVOUT_REDIS/AVOUT_POSTGRES are gone: name those stores
// by their URLs instead.
// Exit codes: 0 done, 1 failed (unreachable server, bad data, timeout; delete: a lock or lease
// held or waited for), 2 usage (also: the object's recorded store is not configured, or
// --store contradicts it), 3 not found or deleted (show, get, set, watch of a deleted object
// say so; `get` or `show` of an object whose value is missing from its store; delete of what
// is not there);
// `lock` and `elect` exit with their command's status (127: it could not start; 128 + the
// signal when stopped, as after a lost hold); `elect` exits 1 when --timeout passed first.
#include "arguments.hpp"
#include "duration.hpp"
#include "inspect.hpp"
#include "json_value.hpp"
#include "object_store.hpp"
#include "run_locked.hpp"
#include "store_urls.hpp"
#include "typed_value.hpp"
#include "watch.hpp"

#include <CLI/CLI.hpp>

#include <sys/time.h>
#include <unistd.h>
#include <csignal>
#include <iostream>
#include <map>
#include <memory>

namespace {

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
  CLI::App app{"avout: inspect and change an avout deployment"};
  avout::tool::Arguments a;
  avout::tool::declare_arguments(app, a);

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
  if (a.help->parsed()) {
    if (a.help_topic.empty()) {
      // app.help() would explain the selected subcommand, `help` itself.
      std::cout << app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal);
      return 0;
    }
    try {
      const auto* topic = app.get_subcommand(a.help_topic);
      if (topic == a.help) throw CLI::OptionNotFound(a.help_topic);
      std::cout << topic->help(app.get_name());
      return 0;
    } catch (const CLI::OptionNotFound&) {
      std::cerr << "avout: no command '" << a.help_topic << "'; run avout help\n";
      return 2;
    }
  }
  const bool json = a.output == "json";
  try {
    // An unknown scheme is a usage error (exit 2) even when ZooKeeper cannot be reached.
    avout::tool::require_registered_schemes(a.store, a.connection.stores);
    if (!a.name.empty()) avout::validate_path(a.name);  // InvalidName (exit 2) before connecting
    // A value that does not parse as its type is refused before anything is created.
    std::optional<avout::tool::TypedValue> parsed;
    if (a.set->parsed() && !a.type.empty()) parsed = avout::tool::parse_value(a.value, a.type);
    auto options = a.connection.client_options();
    if (a.command_timeout.count() > 0 && !a.watch->parsed() && !a.lock->parsed() &&
        !a.elect->parsed()) {
      std::signal(SIGALRM, command_timed_out);
      arm_alarm(a.command_timeout);
      options.connect_timeout = std::min(options.connect_timeout, a.command_timeout);
    }
    if (a.bank_command->parsed()) {
      a.bank.client = options;
      a.bank.stores = avout::tool::split_store_urls(a.connection.stores);
      return avout::tool::run_bank(a.bank);
    }
    // watch waits for SIGINT with sigwait: block it before any thread exists so all inherit it.
    if (a.watch->parsed()) avout::tool::block_interrupts();
    if (a.list->parsed() && !a.prefix.empty()) avout::validate_path(a.prefix);
    auto connected = connect(options);
    avout::Client& client = *connected;
    if (a.list->parsed()) {
      const auto names = avout::tool::list(client, a.kind, a.prefix);
      if (json)
        std::cout << nlohmann::json(names).dump() << "\n";
      else
        for (const auto& found : names) std::cout << found << "\n";
      return 0;
    }
    if (a.gc->parsed()) {
      const auto handles = avout::tool::deployment_stores(
          client, avout::tool::split_store_urls(a.connection.stores));
      std::vector<std::reference_wrapper<avout::Store>>
          stores;  // gc sweeps the client's own store anyway
      for (const auto& handle : handles) {
        if (&handle.get() != &client.default_store()) stores.emplace_back(handle.get());
      }
      auto report = client.gc(stores, a.grace);
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
    if (a.lock->parsed()) return avout::tool::run_locked(client, a.name, a.command, a.kill_after);
    if (a.elect->parsed()) {
      const auto deadline = a.campaign_timeout.count() > 0
                                ? avout::Deadline::after(a.campaign_timeout)
                                : avout::Deadline{};
      return avout::tool::run_elected(
          client, a.name,
          a.candidate_id.empty() ? avout::tool::default_candidate_id() : a.candidate_id, deadline,
          a.command, a.kill_after);
    }
    if (a.show->parsed() && a.kind != "atom" && a.kind != "ref" && a.kind != "agent" &&
        a.kind != "lock") {
      using Show = avout::tool::Report (*)(avout::Client&, const std::string&);
      static const std::map<std::string, Show> recipes{{"semaphore", avout::tool::show_semaphore},
                                                       {"election", avout::tool::show_election},
                                                       {"barrier", avout::tool::show_barrier},
                                                       {"queue", avout::tool::show_queue}};
      avout::tool::print(recipes.at(a.kind)(client, a.name), json, std::cout);
      return 0;
    }
    const bool valued = a.kind == "atom" || a.kind == "ref" || a.kind == "agent";
    const auto chosen =
        valued ? avout::tool::object_store(client, a.kind, a.name, a.store,
                                           avout::tool::split_store_urls(a.connection.stores))
               : avout::StoreHandle::borrowed(client.default_store());
    if (a.erase->parsed()) {
      std::cout << avout::tool::delete_object(client, chosen.get(), a.kind, a.name) << "\n";
      return 0;
    }
    if (a.kind == "lock") {
      avout::tool::print(avout::tool::show_lock(client, a.name), json, std::cout);
      return 0;
    }
    if (a.set->parsed()) {
      auto stored = avout::tool::stored_atom_value(client, chosen.get(), a.name);
      if (!parsed)
        parsed = avout::tool::parse_value(a.value, stored ? avout::tool::type_of(*stored) : "long");
      avout::tool::set_atom(client, chosen.get(), a.name, *parsed, stored);
      return 0;
    }
    if (a.get->parsed()) {
      const auto encoded = a.kind == "atom" ? avout::tool::atom_value(client, chosen.get(), a.name)
                           : a.kind == "ref"
                               ? avout::tool::ref_value(client, chosen.get(), a.name)
                               : avout::tool::agent_value(client, chosen.get(), a.name);
      const auto typed = avout::tool::json_value(encoded);
      std::cout << (json ? avout::tool::dump_line(typed.value)
                         : avout::tool::plain_text(typed.value))
                << "\n";
      return 0;
    }
    if (a.watch->parsed())
      return avout::tool::watch(client, chosen.get(), a.kind, a.name, a.count, json, std::cout);
    const auto report = a.kind == "atom" ? avout::tool::show_atom(client, chosen.get(), a.name)
                        : a.kind == "ref" ? avout::tool::show_ref(client, chosen.get(), a.name)
                                          : avout::tool::show_agent(client, chosen.get(), a.name);
    avout::tool::print(report, json, std::cout);
    // Exit 3 when its value is missing from its store (not when it is only undecodable).
    const auto missing = avout::tool::missing_value_fields()["value_error"];
    return report.contains("value_error") && report["value_error"] == missing ? 3 : 0;
  } catch (const CLI::ValidationError& error) {
    std::cerr << "avout: " << error.what() << "\n";
    return 2;
  } catch (const avout::tool::WrongStore& error) {
    std::cerr << "avout: " << error.what() << "\n";
    return 2;
  } catch (const avout::tool::NotFound& error) {
    std::cerr << "avout: " << error.what() << "\n";
    return 3;
  } catch (const avout::Deleted& error) {
    std::cerr << "avout: deleted: " << error.what() << "\n";
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
