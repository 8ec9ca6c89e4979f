// avout::inspect: the store records of atoms, refs and agents (runtime/store_records.hpp).
#include "runtime/layout.hpp"
#include "runtime/store_records.hpp"

#include <avout/errors.hpp>
#include <avout/inspect.hpp>

namespace avout::inspect {

namespace {
// The kind's word in store record paths and messages.
std::string kind_word(Kind kind) {
  switch (kind) {
    case Kind::atoms: return "atom";
    case Kind::refs: return "ref";
    case Kind::agents: return "agent";
    default: throw InvalidName("only atoms, refs and agents have a store record");
  }
}

detail::Layout layout_of(const Client& client) {
  return detail::Layout(client.options().chroot, client.options().root);
}
}  // namespace

std::optional<StoreIdentity> recorded_store(Client& client, Kind kind, const std::string& name) {
  validate_path(name);
  return detail::recorded_store(client.session(), layout_of(client), kind_word(kind), name);
}

std::string store_record_path(const Client& client, Kind kind, const std::string& name) {
  validate_path(name);
  return layout_of(client).store_record(kind_word(kind), name);
}

}  // namespace avout::inspect
