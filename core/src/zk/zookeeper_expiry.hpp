#pragma once
// Ends a ZooKeeper session from outside, the way a server-side expiry looks to its client:
// for ZooKeeperSession::expire_for_testing and the tests' fault injector, one place.

#include "zk/zookeeper_c.hpp"

#include <avout/zookeeper_session.hpp>

namespace avout::detail {

/// Ends the session of `handle` on the server: twin handles (made with `options`, whose
/// hosts are `handle`'s) resume it and close it until a twin finds it gone. `handle` is
/// pointed at a closed port meanwhile, or it could win its session back between a twin's
/// connect and close, and at `options.hosts` again on return. Each twin waits at most
/// `options.connect_timeout`; gives up when one gets no answer (its caller sees the session
/// still alive).
void end_session_from_outside(zhandle_t* handle, const SessionOptions& options);

}  // namespace avout::detail
