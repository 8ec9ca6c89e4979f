#pragma once
// avout::LeaseLock: a keyed mutex whose holds end by themselves after a duration (a lease),
// with a fencing token per hold. One small strategy per store decides who holds a key; the
// ZooKeeper strategy is in the core, the Redis and PostgreSQL ones in their backends.
//
// One clock judges expiry: Redis's PX timer, PostgreSQL's clock_timestamp(), and for
// ZooKeeper the contender's own steady clock (it takes a lease over only after seeing the
// lease node unchanged for the lease's duration plus a margin). The holder's `expires` is an
// estimate on its own steady clock, measured from before its request was sent, so it never
// ends later than the judging clock's (barring clock rate drift). A holder that may have run
// past it (a pause, a slow disk) is what the fencing token is for: hand it to the protected
// resource, which refuses tokens lower than the highest it has seen.
//
// Deployment conditions for Redis and PostgreSQL, whose judging clock is the store host's
// wall clock (Redis stores a key's expiry as a Unix time; clock_timestamp() is one):
// - A step forward of that clock by S ends every running lease up to S early, while its
//   holder's `expires` still lies ahead: run those hosts with a clock that slews and never
//   steps (chrony or ntpd in their default slewing mode), or fence every write by token.
// - Tokens never fall below the store host's clock in microseconds, so a store that lost its
//   counter (Redis without fsync, a failover to a replica that missed the last writes, a
//   restore) still hands out higher tokens, provided its clock did not go back meanwhile.
// ZooKeeper's tokens are as durable as ZooKeeper's writes, and its expiry needs no wall clock.

#include <avout/errors.hpp>
#include <avout/export.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace avout {

namespace detail {
class LeaseKeeper;
/// A kept lease's latest end (steady clock ticks), shared by its copies; see Lease::latest.
struct LeaseExpiry {
  std::atomic<std::chrono::steady_clock::rep> ticks{0};  ///< latest estimate of the end
};
}  // namespace detail

/// How LeaseLock::lock takes a key.
struct LeaseOptions {
  std::chrono::milliseconds duration{1000};  ///< how long the lease lasts unless renewed; > 0
  std::chrono::milliseconds max_wait{5000};  ///< how long to wait for a held key; 0: one
                                             ///< attempt only. Past it: Timeout
  bool keep_alive = false;  ///< renew every duration/3 until unlock, stop_keep_alive or loss
                            ///< (off by default: a lease that ends by itself is what
                            ///< `duration` asks for)
};

/// One hold of a key. Copyable; only its token identifies the hold to the store.
struct Lease {
  std::string key;          ///< the key held
  std::uint64_t token = 0;  ///< fencing token: strictly increases per key, across processes,
                            ///< releases, expiries and, for Redis and PostgreSQL, store
                            ///< restarts that lost data (never 0 for a real lease)
  std::chrono::steady_clock::time_point expires{};  ///< this process's conservative estimate
                                                    ///< of when the lease ends
  /// Set by LeaseLock: the end as moved by keep-alive or any renew; safe from any thread.
  std::shared_ptr<detail::LeaseExpiry> latest{};
  /// The lease's latest estimated end (`expires` when no LeaseLock tracks it); thread safe.
  std::chrono::steady_clock::time_point latest_expiry() const {
    if (!latest) return expires;
    return std::chrono::steady_clock::time_point(
        std::chrono::steady_clock::duration(latest->ticks.load()));
  }
  /// True while this process's clock says the lease has not ended (nor been lost) yet.
  bool running() const { return std::chrono::steady_clock::now() < latest_expiry(); }
};

/// A store's way of holding leases. Implementations are thread safe; keys and durations
/// reach them already validated. A store error is a BackendError (Redis, PostgreSQL) or
/// ConnectionLoss / SessionExpired (ZooKeeper); an acquire whose outcome is unknown that way
/// holds at worst a lease nobody has, which ends after its duration.
class AVOUT_API LeaseStrategy {
 public:
  virtual ~LeaseStrategy() = default;
  /// What holds the leases, for messages ("redis 127.0.0.1:6379 lease lock jobs").
  virtual std::string description() const = 0;
  /// Takes `key` for `duration` when it is free or its lease has ended, waiting for that
  /// until `deadline`; a deadline already passed makes one attempt. nullopt: still held.
  virtual std::optional<Lease> acquire(const std::string& key, std::chrono::milliseconds duration,
                                       std::chrono::steady_clock::time_point deadline) = 0;
  /// Ends the lease when its token still holds the key; false (and nothing changed) when
  /// the lease had already ended, been released or been taken over.
  virtual bool release(const Lease& lease) = 0;
  /// Makes the lease last `duration` from now when its token still holds the key, and moves
  /// `lease.expires`; false (nothing changed) as for release.
  virtual bool renew(Lease& lease, std::chrono::milliseconds duration) = 0;
};

/// A keyed mutex of leases: `lock(key)` holds `key` until `unlock`, or until the lease's
/// duration passes without a renewal, whichever is first. Cheap to copy (copies share one
/// strategy and one keeper); thread safe. A ZooKeeper LeaseLock must not outlive the Client
/// that made it.
///
/// Keep-alive: the leases of every LeaseLock of the process are watched by ONE keeper thread
/// (started at the first lease that needs it: one kept alive, or one taken by a LeaseLock
/// with an on_lost callback; never for a LeaseLock using neither). It renews each lease
/// locked with `keep_alive` every duration/3, one renewal after another (a store call that
/// hangs delays the others). Keep-alive is off unless asked for, and ends with
/// stop_keep_alive (the hold stays until its end), unlock, or the last copy of the
/// LeaseLock (waiting for its renewal and callbacks in flight; nothing of it runs after).
///
/// Loss: the `on_lost` callbacks are called once per lost lease:
/// - at once when a renewal is refused (the token no longer holds the key: the lease ended
///   at the store, and with ZooKeeper was taken over);
/// - when a renewal throws (store down): retried every duration/10 (1 s at most), the lease
///   is lost at its end unless one succeeded by then; an outage shorter is ridden out;
/// - at its end, for a lease without keep-alive (or after stop_keep_alive) not released nor
///   renewed by hand by then.
/// The lost lease's `latest_expiry()` is cut to the loss first, so `running()` is false
/// before any callback runs.
class AVOUT_API LeaseLock {
 public:
  /// A lease lock over `strategy` (see Client::lease_lock, redis::lease_lock,
  /// postgres::lease_lock).
  explicit LeaseLock(std::shared_ptr<LeaseStrategy> strategy);

  /// Takes `key`, waiting up to `options.max_wait` for its current lease to end, and keeps
  /// it alive when `options.keep_alive`. Throws Timeout past the wait, InvalidName for a bad
  /// key, InvalidDuration for a bad option, the store's error (nothing held, see
  /// LeaseStrategy) when it fails.
  Lease lock(const std::string& key, const LeaseOptions& options = {});
  /// Takes `key` for `duration` when it is free right now (no keep-alive; on_lost fires at
  /// its end unless released); nullopt when it is held. With ZooKeeper, a lease whose holder
  /// died is only taken once this LeaseLock has seen it unchanged for its duration plus a
  /// margin (a first try_lock starts that observation).
  std::optional<Lease> try_lock(const std::string& key, std::chrono::milliseconds duration);
  /// Stops the lease's keep-alive first (waiting for a renewal in flight, so none follows),
  /// then releases it when its token still holds the key; returns false, freeing nothing,
  /// when the lease had already ended (expired and taken, or with Redis and PostgreSQL
  /// expired at all), been released, or been renewed away by another holder. on_lost is not
  /// called for it once unlock returns (a loss not told yet is dropped; one being told is
  /// waited for, unless unlock is called from a lease callback). A store error propagates,
  /// keep-alive stopped all the same.
  bool unlock(const Lease& lease);
  /// Turns `lease`'s keep-alive off while keeping the hold: waits for a renewal in flight,
  /// then none follows; the lease ends at its latest_expiry() unless renewed by hand or
  /// unlocked, and on_lost fires then as for a lease taken without keep-alive. Does
  /// nothing for a lease not kept alive by this LeaseLock (or one already lost or unlocked).
  void stop_keep_alive(const Lease& lease);
  /// Makes `lease` last `duration` from now when its token still holds the key (and
  /// updates lease.expires, and latest_expiry() of every copy; a kept lease is renewed for
  /// `duration` from then on); false, changing nothing, when it no longer does.
  bool renew(Lease& lease, std::chrono::milliseconds duration);
  /// Adds a callback called once per lease of this LeaseLock (and its copies) that is lost
  /// (see the class comment for when), with that lease. It runs on the process's ONE lease
  /// callback thread (started at the first loss to tell), never on the keeper thread and
  /// never under an internal lock: a slow or blocking callback delays no renewal, only the
  /// lease callbacks queued behind it. It may call any LeaseLock (unlock, lock anew) and may
  /// drop the last copy of its own. Do not capture this LeaseLock in it (the cycle keeps
  /// the keep-alive going); what it throws is logged and ignored, the other callbacks still
  /// run. Callbacks queued when the process exits are dropped.
  void on_lost(std::function<void(const Lease&)> callback);

  /// The strategy's description, for messages.
  std::string description() const;

 private:
  std::shared_ptr<LeaseStrategy> strategy_;
  std::shared_ptr<detail::LeaseKeeper> keeper_;
};

/// Throws InvalidName unless `key` is a lease key every store accepts: 1 to 256 visible
/// ASCII characters ('!' to '~'), no '/', and neither "." nor "..".
AVOUT_API void validate_lease_key(const std::string& key);

/// Throws InvalidName unless `name` names a Redis or PostgreSQL lease lock: 1 to 1024
/// characters, no control characters.
AVOUT_API void validate_lease_name(const std::string& name);

/// Throws InvalidDuration unless `duration` is positive and at most a year; `what` names it.
AVOUT_API void validate_lease_duration(std::chrono::milliseconds duration, const char* what);

namespace detail {
/// For stores that cannot notify: calls `attempt` until it yields a lease or `deadline`
/// passes, sleeping between attempts for the wait `attempt` suggests through its argument
/// (capped to a short, jittered poll interval so a release is seen soon, and to the
/// deadline). Always makes at least one attempt.
AVOUT_API std::optional<Lease> poll_for_lease(
    std::chrono::steady_clock::time_point deadline,
    const std::function<std::optional<Lease>(std::chrono::milliseconds& retry_in)>& attempt);
}  // namespace detail

}  // namespace avout
