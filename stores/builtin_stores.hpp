#pragma once
// The project's own programs register every store it ships with one call.

namespace avout {

/// Registers the URL schemes of every store this project ships with avout::make_store
/// (zookeeper: is always there; redis, rediss, tcp, unix, postgresql, postgres). Idempotent.
void register_builtin_stores();

}  // namespace avout
