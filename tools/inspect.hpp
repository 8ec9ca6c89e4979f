#pragma once
// What the `avout` tool reads out of a deployment (through avout/inspect.hpp): names of
// atoms, refs, agents, leases, locks and recipes, one object's state as a report (printed as
// JSON or as a table), and the few objects it can delete safely.

#include <avout/avout.hpp>

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>
#include <vector>

namespace avout::tool {

/// Raised for an object that does not exist (exit code 3).
struct NotFound : Error {
  using Error::Error;
};

/// The kinds `list` takes: "atoms", "refs", "agents", "leases", "locks", "semaphores",
/// "elections", "barriers", "queues".
const std::vector<std::string>& listed_kinds();

/// Names of every object of `kind` (one of listed_kinds()), sorted; with a `prefix` (a path,
/// InvalidName otherwise) only the name `prefix` and the names below it ("/jobs" keeps
/// "/jobs" and "/jobs/urgent", not "/jobsite").
std::vector<std::string> list(Client& client, const std::string& kind,
                              const std::string& prefix = "");

/// A report on one object: "kind" and "name" first, then its fields in order.
using Report = nlohmann::ordered_json;

/// An atom: its store (identity and address), its value as typed JSON and the value's type
/// (read from the stored bytes, see json_value.hpp), and its writes, from `store`.
Report show_atom(Client& client, Store& store, const std::string& name);
/// A ref: newest value and type, commit zxid and kept history with their values.
Report show_ref(Client& client, Store& store, const std::string& name);
/// An agent: value and type, error and queued sends.
Report show_agent(Client& client, Store& store, const std::string& name);
/// A lock (or read-write lock): its holder(s) and waiters, in order, with the session that
/// owns each.
Report show_lock(Client& client, const std::string& name);

/// A semaphore: its permits N, the holders (with their permits' fencing tokens) and the
/// waiters, in the order they are served.
Report show_semaphore(Client& client, const std::string& name);
/// A leader election: the leader's id and fencing token, and every candidate in line.
Report show_election(Client& client, const std::string& name);
/// A double barrier: its participants N, its round and whether it is open or closed (an open
/// round after the first says whether the previous one completed or broke), the closed
/// round's members (inside, left or dead) and the participants waiting for the next.
Report show_barrier(Client& client, const std::string& name);
/// A work queue: its length, its oldest item (value, type, when it was put) and how many
/// takers wait.
Report show_queue(Client& client, const std::string& name);

/// Prints `report` as one line of JSON (`json`) or as an indented table for people (an
/// array as one row per element, an object as one line per field; a stored value as JSON).
void print(const Report& report, bool json, std::ostream& out);

/// The encoded value the atom `name` holds in `store`; NotFound when it has none.
Bytes atom_value(Client& client, Store& store, const std::string& name);
/// The encoded newest value of the ref `name` in `store`; NotFound when it does not exist or
/// `store` does not hold its value.
Bytes ref_value(Client& client, Store& store, const std::string& name);
/// The encoded value of the agent `name` in `store`; NotFound as ref_value.
Bytes agent_value(Client& client, Store& store, const std::string& name);

/// Deletes the object `name` of `kind` (atom, ref, agent: values in `store`; lock, rwlock,
/// lease) through Client::remove_* and says what was deleted. NotFound when there was nothing
/// to delete (never made, or deleted already); NotEmpty, nothing deleted, when a lock or lease
/// is held or waited for.
std::string delete_object(Client& client, Store& store, const std::string& kind,
                          const std::string& name);

}  // namespace avout::tool
