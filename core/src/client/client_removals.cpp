// Client::remove_*: deleting atoms, refs, agents, locks and lease locks (docs/transactions.md,
// "Deletion"). Each engine removes its own kind; this file only finds the right cell or path.
#include "agents/agent_removal.hpp"
#include "atoms/atom_removal.hpp"
#include "locks/lock_removal.hpp"
#include "runtime/runtime.hpp"
#include "runtime/zookeeper_held_values.hpp"
#include "stm/stm_context.hpp"

#include <avout/client.hpp>

namespace avout {

bool Client::remove_atom(const std::string& name) { return remove_atom(name, default_store()); }

bool Client::remove_atom(const std::string& name, Store& store) {
  validate_path(name);
  // The same cell and notice node attach_atom picks.
  auto cell = store.atom_state(name);
  std::string notice;
  if (detail::held_node_path(*cell).empty()) {
    cell = store.atom_state(atom_value_key(name));
    notice = runtime_->layout().atom_notice(name);
  }
  return detail::remove_atom_cell(name, *cell, *session_, notice, options_.retry_limit);
}

bool Client::remove_ref(const std::string& name) { return remove_ref(name, default_store()); }

bool Client::remove_ref(const std::string& name, Store& store) { return stm_->remove(name, store); }

bool Client::remove_agent(const std::string& name) { return remove_agent(name, default_store()); }

bool Client::remove_agent(const std::string& name, Store& store) {
  return detail::remove_agent(*runtime_, name, store);
}

bool Client::remove_lock(const std::string& name) {
  validate_path(name);
  return detail::remove_lock_nodes(*session_, "lock " + name, runtime_->layout().lock(name, false),
                                   false);
}

bool Client::remove_read_write_lock(const std::string& name) {
  validate_path(name);
  return detail::remove_lock_nodes(*session_, "read-write lock " + name,
                                   runtime_->layout().lock(name, true), true);
}

bool Client::remove_lease(const std::string& name) {
  validate_path(name);
  return detail::remove_lease_nodes(*session_, "lease lock " + name,
                                    runtime_->layout().lease(name));
}

}  // namespace avout
