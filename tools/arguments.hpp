#pragma once
// What the `avout` command line says: every option and command, declared on a CLI::App with
// its description and default (help shows both), parsed into one Arguments.

#include "bank.hpp"

#include <avout/avout.hpp>

#include <CLI/CLI.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace avout::tool {

/// Where ZooKeeper is and how the tool's client talks to it.
struct Connection {
  std::string zookeeper = "127.0.0.1:2181";  ///< --zookeeper, AVOUT_ZOOKEEPER
  std::string root = "/avout";               ///< --root
  std::chrono::milliseconds session_timeout = std::chrono::seconds(10);  ///< --session-timeout
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(5);   ///< --connect-timeout
  std::string digest;               ///< --digest, AVOUT_DIGEST: user:password or empty
  std::vector<std::string> stores;  ///< URLs of the deployment's stores besides zookeeper:
  int verbosity = 0;                ///< -v flags: how much of the library's log to print

  /// The client's options: these settings, and the logger `verbosity` asks for.
  ClientOptions client_options() const;
};

/// Everything parsed, and the commands, to ask which one was given (`list->parsed()`).
struct Arguments {
  Connection connection;                         ///< the global options
  std::string output = "table";                  ///< -o: table or json
  std::chrono::milliseconds command_timeout{0};  ///< --command-timeout; 0: never
  std::string kind;                              ///< the kind a command names (atom, refs...)
  std::string name;                              ///< the object's or recipe's name
  std::string value;                             ///< set: the new value as typed
  std::string type;                              ///< set --type; empty: the stored value's
  std::string store;  ///< --store: where the object's values live; empty: from its record
  std::string prefix;                            ///< list --prefix
  std::string help_topic;                        ///< help COMMAND
  std::size_t count = 0;                         ///< watch --count; 0: no limit
  std::vector<std::string> command;              ///< lock and elect: the command to run
  std::chrono::milliseconds kill_after = std::chrono::seconds(10);  ///< --kill-after
  std::string candidate_id;                                         ///< elect --id; empty: host:pid
  std::chrono::milliseconds campaign_timeout{0};                    ///< elect --timeout; 0: forever
  std::chrono::milliseconds grace = std::chrono::minutes(10);       ///< gc --grace
  BankSettings bank;  ///< bank's settings (not its client's)

  CLI::App* help = nullptr;          ///< `help [COMMAND]`
  CLI::App* list = nullptr;          ///< `list KIND`
  CLI::App* get = nullptr;           ///< `get KIND NAME`
  CLI::App* show = nullptr;          ///< `show KIND NAME`
  CLI::App* set = nullptr;           ///< `set atom NAME VALUE`
  CLI::App* watch = nullptr;         ///< `watch KIND NAME`
  CLI::App* erase = nullptr;         ///< `delete KIND NAME`
  CLI::App* lock = nullptr;          ///< `lock NAME -- COMMAND`
  CLI::App* elect = nullptr;         ///< `elect NAME -- COMMAND`
  CLI::App* gc = nullptr;            ///< `gc`
  CLI::App* bank_command = nullptr;  ///< `bank`
};

/// Declares every option and command of `avout` on `app`, parsed into `a` (which must outlive
/// the parse). Durations go through add_duration_option (duration.hpp).
void declare_arguments(CLI::App& app, Arguments& a);

}  // namespace avout::tool
