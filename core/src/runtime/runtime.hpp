#pragma once
// detail::Runtime: what every engine of one client shares (the STM, agents, locks, atoms):
// the session, the callback thread, the node cache, the path layout, unique point ids,
// session liveness (the sessions' nodes, and this session's monitor), the cache of immutable
// values, the markers waiting to ride in a later commit, the client's settings and its
// metrics recorder.

#include "runtime/layout.hpp"
#include "runtime/metrics_recorder.hpp"

#include <avout/backend.hpp>
#include <avout/client_options.hpp>
#include <avout/zookeeper_session.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace avout::detail {

class CallbackExecutor;
class NodeCache;
class PendingMarkers;
class SessionDeaths;
class SessionLiveness;

/// The shared state of one client's engines. Thread safe.
class Runtime {
 public:
  /// Creates the deployment's STM folders and announces this session.
  Runtime(ZooKeeperSession& session, const ClientOptions& options,
          std::shared_ptr<CallbackExecutor> callbacks);
  /// Removes the markers still waiting for a commit (best effort; gc removes what is left).
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// The client's session.
  ZooKeeperSession& session() { return session_; }
  /// The client's settings (retry limit, history bounds, barging, logger).
  const ClientOptions& options() const { return options_; }
  /// Every coordination path of the deployment.
  const Layout& layout() const { return layout_; }
  /// Heads, tags and liveness nodes this client has read, kept valid by watches
  /// (docs/transactions.md rule 12).
  NodeCache& nodes() { return *nodes_; }
  /// Landed commits' markers, per thread, until a later commit removes them (rule 16).
  PendingMarkers& markers() { return *markers_; }
  /// The thread user callbacks run on.
  std::shared_ptr<CallbackExecutor> callbacks() const { return callbacks_; }
  /// Tells when a session of the deployment ends (for watches of values held elsewhere).
  const std::shared_ptr<SessionDeaths>& session_deaths() const { return deaths_; }
  /// Whether what this client holds through its session still counts (one thread for every
  /// lock and recipe of the client).
  SessionLiveness& liveness() { return *liveness_; }
  /// Where the library's messages go (empty: the default logger).
  const Logger& logger() const { return options_.logger; }
  /// Records the client's metrics into ClientOptions::metrics (or nowhere).
  const MetricsRecorder& metrics() const { return metrics_; }

  /// A fresh unique point (or attempt id) that names the current session as its writer,
  /// so gc can tell whether the writer may still commit it (docs/transactions.md rule 9).
  Point new_point();
  /// Makes sure this session's liveness node exists (once per session).
  void announce_session();
  /// True when `session` is this one or its liveness node exists (as of the node cache,
  /// which a watch keeps current).
  bool alive(std::int64_t session);

  /// The value at `point` of `data`, from the cache or the store (values never change).
  /// nullopt when the store has no value there.
  std::optional<Bytes> fetch_value(ReferenceData& data, const Point& point);
  /// True when the value at `point` is cached: fetch_value would not ask its store.
  bool has_value(const Point& point);
  /// Remembers a value just written at `point`.
  void remember(const Point& point, const Bytes& value);

 private:
  ZooKeeperSession& session_;
  const ClientOptions& options_;
  Layout layout_;
  std::shared_ptr<CallbackExecutor> callbacks_;
  std::unique_ptr<NodeCache> nodes_;
  std::unique_ptr<PendingMarkers> markers_;
  std::shared_ptr<SessionDeaths> deaths_;
  std::unique_ptr<SessionLiveness> liveness_;
  MetricsRecorder metrics_;

  // Session events for the metrics: the listener (0: none, no sink) turns the session's
  // states into events and posts them to the callback thread (a user's sink never runs on
  // ZooKeeper's event thread). `session_down_`: a connect after it is a reconnect or renewal,
  // not the first connect; `seen_generation_` tells which.
  void on_session_state(SessionState state);
  std::uint64_t session_listener_ = 0;
  std::atomic<bool> session_down_{false};
  std::atomic<std::uint64_t> seen_generation_{0};

  std::mutex announce_mutex_;
  std::uint64_t announced_generation_ = ~std::uint64_t{0};

  std::mutex cache_mutex_;
  std::unordered_map<std::string, Bytes> cache_;  // point id -> value
};

}  // namespace avout::detail
