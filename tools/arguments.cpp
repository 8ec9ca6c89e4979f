#include "arguments.hpp"

#include "duration.hpp"
#include "inspect.hpp"
#include "verbosity.hpp"

#include <avout/version.hpp>

namespace avout::tool {

namespace {

// ZooKeeper digest credentials: user:password, both non-empty. The value is not echoed: it
// holds a password.
const CLI::Validator digest_credentials(
    [](std::string& text) {
      const auto colon = text.find(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
        return std::string("expected user:password, both non-empty");
      return std::string();
    },
    "");

}  // namespace

ClientOptions Connection::client_options() const {
  ClientOptions options{.hosts = zookeeper,
                        .session_timeout = session_timeout,
                        .connect_timeout = connect_timeout,
                        .root = root,
                        .logger = logger_for(verbosity)};
  if (!digest.empty()) options.digest = digest;
  return options;
}

void declare_arguments(CLI::App& app, Arguments& a) {
  using std::chrono::milliseconds;
  app.require_subcommand(1);
  app.option_defaults()->always_capture_default();  // help shows every default
  app.set_version_flag("--version", std::string("avout ") + avout::version());
  app.add_option("--zookeeper", a.connection.zookeeper, "ZooKeeper host:port[,host:port][/chroot]")
      ->envname("AVOUT_ZOOKEEPER");
  app.add_option("--root", a.connection.root, "avout's root node");
  app.add_option("--digest", a.connection.digest,
                 "ZooKeeper digest credentials user:password (both non-empty)")
      ->envname("AVOUT_DIGEST")
      ->check(digest_credentials)
      ->type_name("USER:PASSWORD")
      ->default_str("");
  app.add_option("--stores", a.connection.stores,
                 "URL of a store the deployment keeps values in (repeatable; zookeeper: is "
                 "always one; AVOUT_STORES: URLs separated by spaces or commas): gc and bank use "
                 "them all, get/show/set/watch/delete the one whose scheme and name= an "
                 "object's store record names. Replaces --redis/--postgres")
      ->envname("AVOUT_STORES")
      ->allow_extra_args(false)
      ->default_str("");
  add_duration_option(
      app, "--session-timeout", a.connection.session_timeout,
      DurationLimits{.least = std::chrono::seconds(1), .most = std::chrono::minutes(10)},
      "ZooKeeper session timeout: how long a frozen or cut-off `lock` or `elect` may go "
      "unnoticed before its hold is lost");
  add_duration_option(app, "--connect-timeout", a.connection.connect_timeout,
                      DurationLimits{.least = milliseconds(100), .most = std::chrono::minutes(10)},
                      "give up when no ZooKeeper session is made within this (exit 1)");
  app.add_flag("-v,--verbose", a.connection.verbosity,
               "print the library's and the ZooKeeper client's log to stderr: -v warnings and "
               "errors, -vv also info, -vvv also debug (default: nothing)");
  app.add_option("-o,--output", a.output, "output format")->check(CLI::IsMember({"json", "table"}));
  add_duration_option(
      app, "--command-timeout", a.command_timeout, DurationLimits{},
      "give up on a command (not watch, lock or elect) after this long (exit 1); 0: never");

  const std::string store_help =
      "URL of the store its values live in: zookeeper:, redis://..., postgresql://... or any "
      "registered scheme (default: the store ZooKeeper records for it, found among zookeeper: "
      "and the --stores; else zookeeper:)";
  a.help = app.add_subcommand("help", "print this help, or a command's");
  a.help->add_option("command", a.help_topic, "the command to explain");
  a.list = app.add_subcommand("list", "list the names of objects or recipes of one kind");
  a.list
      ->add_option("kind", a.kind,
                   "atoms|refs|agents|leases|locks|semaphores|elections|barriers|queues")
      ->required()
      ->check(CLI::IsMember(listed_kinds()));
  a.list->add_option("--prefix", a.prefix, "only this name and the names below it, e.g. /jobs");
  a.get = app.add_subcommand("get", "print the value of an atom, ref or agent alone");
  a.get->add_option("kind", a.kind, "atom|ref|agent")
      ->required()
      ->check(CLI::IsMember({"atom", "ref", "agent"}));
  a.get->add_option("name", a.name, "its name, e.g. /counter")->required();
  a.get->add_option("--store", a.store, store_help);
  a.show = app.add_subcommand("show", "show one object or recipe");
  a.show->add_option("kind", a.kind, "atom|ref|agent|lock|semaphore|election|barrier|queue")
      ->required()
      ->check(CLI::IsMember(
          {"atom", "ref", "agent", "lock", "semaphore", "election", "barrier", "queue"}));
  a.show->add_option("name", a.name, "its name, e.g. /counter")->required();
  a.show->add_option("--store", a.store, store_help);
  a.set = app.add_subcommand("set", "set an atom's value");
  a.set->add_option("kind", a.kind, "atom")->required()->check(CLI::IsMember({"atom"}));
  a.set->add_option("name", a.name, "its name")->required();
  a.set->add_option("value", a.value, "the new value")->required();
  a.set->add_option("--type", a.type, "the value's type (default: the stored value's, else long)")
      ->check(CLI::IsMember({"long", "double", "string", "bool"}));
  a.set->add_option("--store", a.store, store_help);
  a.watch = app.add_subcommand("watch", "print each new value of an atom or ref until Ctrl-C");
  a.watch->add_option("kind", a.kind, "atom|ref")
      ->required()
      ->check(CLI::IsMember({"atom", "ref"}));
  a.watch->add_option("name", a.name, "its name")->required();
  a.watch->add_option("--count", a.count, "stop after this many values (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  a.watch->add_option("--store", a.store, store_help);
  a.erase = app.add_subcommand(
      "delete",
      "delete an object: an atom, ref or agent keeps a tombstone (its name is never reused) and "
      "its values leave the store; a lock or lease only while free. Exit 0 deleted, 3 nothing "
      "to delete (or deleted already), 1 held or waited for (nothing deleted) or failed");
  a.erase->add_option("kind", a.kind, "atom|ref|agent|lock|rwlock|lease")
      ->required()
      ->check(CLI::IsMember({"atom", "ref", "agent", "lock", "rwlock", "lease"}));
  a.erase->add_option("name", a.name, "its name")->required();
  a.erase->add_option("--store", a.store, store_help);
  a.lock = app.add_subcommand(
      "lock", "run a command while holding a lock; its fencing token is in AVOUT_FENCING_TOKEN");
  a.lock->add_option("name", a.name, "the lock's name")->required();
  a.lock->add_option("command", a.command, "the command and its arguments, after --")
      ->required()
      ->default_str("");
  const DurationLimits kill_after_limits{.most = std::chrono::hours(1)};
  const std::string kill_after_help =
      "time between the SIGTERM of a lost hold and the SIGKILL of a command still running";
  add_duration_option(*a.lock, "--kill-after", a.kill_after, kill_after_limits, kill_after_help);
  a.elect = app.add_subcommand(
      "elect",
      "campaign in a leader election and run a command while leading; its fencing token is in "
      "AVOUT_FENCING_TOKEN, its id in AVOUT_LEADER_ID");
  a.elect->add_option("name", a.name, "the election's name")->required();
  a.elect->add_option("command", a.command, "the command and its arguments, after --")
      ->required()
      ->default_str("");
  a.elect
      ->add_option("--id", a.candidate_id,
                   "the id to campaign with, what `show election` names (default: host:pid)")
      ->default_str("");
  add_duration_option(
      *a.elect, "--timeout", a.campaign_timeout, DurationLimits{},
      "give up (exit 1, nothing run) when not leading after this long; 0: wait forever");
  add_duration_option(*a.elect, "--kill-after", a.kill_after, kill_after_limits, kill_after_help);
  a.gc = app.add_subcommand(
      "gc",
      "erase values no ref references whose writers are dead, in zookeeper: and the --stores");
  add_duration_option(
      *a.gc, "--grace", a.grace,
      DurationLimits{.least = std::chrono::seconds(1), .most = std::chrono::hours(24 * 365)},
      "keep commit markers younger than this (at least ClientOptions::marker_grace, 2m by "
      "default)");
  a.bank_command = app.add_subcommand(
      "bank",
      "transfer between accounts in zookeeper: and the --stores from N processes; print the total");
  a.bank_command->add_option("--processes", a.bank.processes, "transferring processes")
      ->check(CLI::Range(1, 64));
  a.bank_command
      ->add_option("--accounts", a.bank.accounts,
                   "accounts, spread round-robin over zookeeper: and the --stores")
      ->check(CLI::Range(2, 10000));
  add_duration_option(
      *a.bank_command, "--seconds", a.bank.duration,
      DurationLimits{.least = std::chrono::seconds(1), .most = std::chrono::hours(1)},
      "how long the processes transfer (a total is printed each second)");
}

}  // namespace avout::tool
