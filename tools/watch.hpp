#pragma once
// `avout watch`: prints each new value of an atom or ref, whatever its type, until SIGINT or
// a count of values.

#include <avout/avout.hpp>

#include <iosfwd>
#include <string>

namespace avout::tool {

/// Blocks SIGINT in the calling thread; call before any thread starts so all inherit it and
/// watch() alone receives it.
void block_interrupts();

/// Watches the atom or ref (`kind`) `name` in `store`: says "watching ..." on stderr once the
/// watch is in place, then prints each new value (as JSON, see json_value.hpp; a JSON object
/// with its kind, name and type per line with `json`) until
/// SIGINT or `count` values (0: no limit). NotFound when it does not exist. Returns 0.
int watch(Client& client, Store& store, const std::string& kind, const std::string& name,
          std::size_t count, bool json, std::ostream& out);

}  // namespace avout::tool
