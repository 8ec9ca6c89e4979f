#pragma once
// What the `avout` tool reads out of a deployment: names of atoms, refs, agents and leases,
// and one object's state, described for people.

#include <avout/avout.hpp>

#include <iosfwd>
#include <string>
#include <vector>

namespace avout::tool {

/// Raised for an object that does not exist (exit code 3).
struct NotFound : Error {
  using Error::Error;
};

/// Names of every object of `kind` ("atoms", "refs", "agents", "leases", "locks").
std::vector<std::string> list(Client& client, const std::string& kind);

/// Prints an atom: its value and writes, from `store`.
void show_atom(Client& client, Store& store, const std::string& name, std::ostream& out);
/// Prints a ref: newest value, commit zxid and kept history with their values.
void show_ref(Client& client, Store& store, const std::string& name, std::ostream& out);
/// Prints an agent: value, error and queued sends.
void show_agent(Client& client, Store& store, const std::string& name, std::ostream& out);
/// Prints a lock (or read-write lock): its holder(s) and waiters, in order, with the session
/// that owns each.
void show_lock(Client& client, const std::string& name, std::ostream& out);

}  // namespace avout::tool
