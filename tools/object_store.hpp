#pragma once
// Which store the `avout` tool reads an atom's, ref's or agent's values through: the one
// ZooKeeper records for the object (its scheme and name), resolved among the deployment's
// stores (--stores, AVOUT_STORES; zookeeper: needs none), so that no object is read through
// another store than the one holding its values.

#include <avout/avout.hpp>
#include <avout/store_registry.hpp>

#include <string>
#include <vector>

namespace avout::tool {

/// The object's recorded store is not one the command can use (exit code 2): --store names
/// another, or no URL of --stores/AVOUT_STORES has its identity.
struct WrongStore : Error {
  using Error::Error;
};

/// The store of the `kind` ("atom", "ref", "agent") `name`. With a record: the store of
/// `store_urls` (the client's own first) whose identity it names; `given` (--store; empty
/// when not given) must have that identity too. Without one (the object does not exist, or
/// no process attached it since records began): `given`, else the client's own store.
/// WrongStore naming the object and the stores by identity (never a URL) otherwise.
StoreHandle object_store(Client& client, const std::string& kind, const std::string& name,
                         const std::string& given, const std::vector<std::string>& store_urls);

}  // namespace avout::tool
