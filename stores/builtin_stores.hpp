#pragma once
// The project's own programs register every store it ships with one call.

namespace avout {

/// Registers the URL schemes of every store this build has with avout::make_store (zookeeper:
/// is always there; redis, rediss, tcp, unix with AVOUT_WITH_REDIS; postgresql, postgres with
/// AVOUT_WITH_POSTGRES). Idempotent.
void register_builtin_stores();

}  // namespace avout
