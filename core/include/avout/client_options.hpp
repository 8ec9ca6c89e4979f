#pragma once
// avout::ClientOptions: the one settings struct of a Client, flat so that designated
// initializers name every field (ClientOptions{.hosts = h, .session_timeout = 4000ms}).

#include <avout/export.hpp>
#include <avout/isolation.hpp>
#include <avout/logger.hpp>
#include <avout/metrics.hpp>
#include <avout/zookeeper_session.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace avout {

/// Barging (docs/transactions.md rule 10): how old transactions avoid starving under contention.
/// Client's constructor throws InvalidOption for a setting that makes no sense.
struct BargingOptions {
  bool enabled = true;            ///< false: transactions never claim refs (and may starve)
  std::size_t after = 3;          ///< failed attempts after which a transaction claims its refs;
                                  ///< at least 1 (a claim follows a failed attempt)
  std::size_t yield_limit = 100;  ///< most attempts one dosync gives way to older claimants
                                  ///< (0: it never does)
};

/// Settings of a Client. Durations: 0 is never a valid value.
struct ClientOptions {
  std::string hosts = "127.0.0.1:2181";              ///< ZooKeeper "host:port,host:port"; a
                                                     ///< "/chroot" at its end moves to `chroot`
  std::string chroot{};                              ///< all paths below this node; must exist
                                                     ///< ("/": none); InvalidName if `hosts`
                                                     ///< names another
  std::chrono::milliseconds session_timeout{10000};  ///< ZooKeeper session timeout
  std::chrono::milliseconds connect_timeout{10000};  ///< wait for the first session
  std::optional<std::string> digest{};               ///< "user:password": created nodes get a
                                                     ///< creator-only ACL
  std::string root = "/avout";                       ///< where avout keeps coordination nodes
  std::size_t retry_limit = 10000;                   ///< swaps/transactions give up after this
  /// The deadline of every dosync, Atom::swap-style update, Lock/ReadWriteLock lock() and
  /// Agent send/send_off (outside dosync and actions) and Agent::await given none (empty:
  /// they wait without limit); positive, else InvalidDuration.
  std::optional<std::chrono::milliseconds> operation_timeout{};
  std::size_t max_history = 10;  ///< most older versions a ref keeps
  std::size_t min_history = 0;   ///< older versions a ref keeps at least;
                                 ///< history misses grow it to max_history
  BargingOptions barging{};      ///< claims of old transactions
  /// What every dosync of this client guarantees unless it asks otherwise
  /// (docs/transactions.md, "Isolation").
  Isolation isolation = Isolation::serializable;
  /// How long a commit marker outlives its commit (docs/transactions.md rule 6): gc never
  /// removes a younger one, and an owner whose commit reply was lost trusts a marker's absence
  /// ("not landed") only when it was answered within half of it since the commit was sent;
  /// later it asks whether the heads it wrote name its commit, else reports OutcomeUnknown.
  /// Every process of a deployment must use the same; positive, else InvalidDuration.
  std::chrono::milliseconds marker_grace{120000};
  Logger logger{};  ///< receives every library message and the ZooKeeper C client's log;
                    ///< empty: default_logger() (warnings and errors to stderr, rate-limited)
  /// Receives the client's metrics (commits, retries by cause, lock waits, agent queues,
  /// session events: docs/metrics.md), e.g. a PrometheusMetrics; empty: nothing is recorded.
  /// Several clients may share one.
  std::shared_ptr<MetricsSink> metrics{};
};

/// The session settings a client with `options` runs on (its ZooKeeper fields): the one
/// place they are taken over.
AVOUT_API SessionOptions session_options(const ClientOptions& options);

}  // namespace avout
