#pragma once
// The holding relay's old name, for the tests that include it: the relay is
// support/tcp_relay.hpp (hold, release, delivered).

#include "support/tcp_relay.hpp"

namespace avout::testing {

/// The relay of support/tcp_relay.hpp.
using HoldingRelay = TcpRelay;

}  // namespace avout::testing
