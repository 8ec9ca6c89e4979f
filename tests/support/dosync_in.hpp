#pragma once
// A dosync in a chosen isolation mode, or in the client's default one: the proofs of issue
// 40 run the same body both ways (write_skew_test, opacity tests, stale_read_fault_test).

#include <avout/avout.hpp>

#include <optional>

namespace avout::testing {

/// Runs `body` as client.dosync(*isolation, body), or as client.dosync(body) (the client's
/// default mode) when `isolation` is empty.
template <typename F>
auto dosync_in(avout::Client& client, std::optional<avout::Isolation> isolation, F&& body) {
  return isolation ? client.dosync(*isolation, body) : client.dosync(body);
}

}  // namespace avout::testing
