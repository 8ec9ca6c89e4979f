#pragma once
// The one error hierarchy of avout. Every failure a caller can see is one of these types;
// C error codes (ZooKeeper, hiredis, libpq) are translated into them at one border per client.

#include <avout/export.hpp>

#include <stdexcept>
#include <string>

namespace avout {

/// Base of every error avout throws.
class AVOUT_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The connection to ZooKeeper dropped before a reply came: the operation's outcome is unknown.
class AVOUT_API ConnectionLoss : public Error {
 public:
  using Error::Error;
};

/// A commit (or creation) whose reply was lost could not be resolved: it may or may not have
/// landed. Deliberately not a ConnectionLoss: a handler that retries on ConnectionLoss must
/// not run again work that may already have landed.
class AVOUT_API OutcomeUnknown : public Error {
 public:
  using Error::Error;
};

/// The ZooKeeper session expired: its ephemeral nodes, watches and held locks are gone.
class AVOUT_API SessionExpired : public Error {
 public:
  using Error::Error;
};

/// A transactional call (alter, commute, ensure, ref_set) was made outside dosync on this thread.
class AVOUT_API NoTransaction : public Error {
 public:
  using Error::Error;
};

/// A transaction or swap gave up after its configured number of retries.
class AVOUT_API RetryLimitExceeded : public Error {
 public:
  using Error::Error;
};

/// The transaction committed, but a step after its commit (a commit callback such as an
/// agent send's follow-up) failed; the message names the step. The body is not run again.
class AVOUT_API CommittedWithError : public Error {
 public:
  using Error::Error;
};

/// A validator rejected a new value; nothing was changed.
class AVOUT_API ValidationError : public Error {
 public:
  using Error::Error;
};

/// Bytes read from a store are not a valid encoding of the requested type.
class AVOUT_API CodecError : public Error {
 public:
  using Error::Error;
};

/// A value is larger than its store accepts; nothing was written.
class AVOUT_API ValueTooLarge : public Error {
 public:
  using Error::Error;
};

/// A value store (Redis, PostgreSQL, a user's own) failed; the message carries the store's own.
class AVOUT_API BackendError : public Error {
 public:
  using Error::Error;
};

/// The store could not be reached or stopped answering (refused, lost or timed-out
/// connection): a write whose reply was lost may or may not have been applied.
class AVOUT_API StoreUnavailable : public BackendError {
 public:
  using BackendError::BackendError;
};

/// The store answered with an error (permission, authentication, read-only, a failed
/// statement): the request was not applied.
class AVOUT_API StoreRefused : public BackendError {
 public:
  using BackendError::BackendError;
};

/// A store has no value at the requested commit point (ReferenceData::get).
class AVOUT_API MissingPoint : public BackendError {
 public:
  using BackendError::BackendError;
};

/// A lock this process believed it held was lost (its session expired or its node vanished).
class AVOUT_API LockLost : public Error {
 public:
  using Error::Error;
};

/// A barrier round can no longer complete: a member that entered died (its session ended, or
/// it gave up leaving) before recording its leaving, or this participant's own session ended
/// after it entered. The message names the barrier and the member.
class AVOUT_API BarrierBroken : public Error {
 public:
  using Error::Error;
};

/// A process opened a name with other settings than its creator's (a ReadWriteLock with
/// another writer policy, a Barrier with another participant count, an atom, ref or agent
/// through another store than the one ZooKeeper records for it); nothing was opened.
/// The message names the object and both settings.
class AVOUT_API Mismatch : public Error {
 public:
  using Error::Error;
};

/// The object was deleted (Client::remove_atom and its kin): every later use of it, and
/// attaching its name again, throws this; nothing is recreated. The message names the object.
class AVOUT_API Deleted : public Error {
 public:
  using Error::Error;
};

/// An agent whose action failed refuses sends until restart() (the message names the error).
class AVOUT_API AgentFailed : public Error {
 public:
  using Error::Error;
};

/// A send names an action the sending agent handle never defined; nothing was sent.
class AVOUT_API UndefinedAction : public Error {
 public:
  using Error::Error;
};

/// A duration or wait that is zero, negative or absurdly long; nothing was done.
class AVOUT_API InvalidDuration : public Error {
 public:
  using Error::Error;
};

/// A ClientOptions setting that makes no sense (its field's documentation says which values
/// do); no client was made.
class AVOUT_API InvalidOption : public Error {
 public:
  using Error::Error;
};

/// A wait ran past its deadline.
class AVOUT_API Timeout : public Error {
 public:
  using Error::Error;
};

/// A name or path given to avout is not acceptable (empty, relative, "..", bad characters).
class AVOUT_API InvalidName : public Error {
 public:
  using Error::Error;
};

/// A conditional write names a node whose int32 version is exhausted (or already wrapped):
/// sending it could wrap the version to -1, which ZooKeeper reads as "any version".
class AVOUT_API VersionLimitReached : public Error {
 public:
  using Error::Error;
};

/// A ZooKeeper call failed with a result code that is about the node, not the connection.
class AVOUT_API ZooKeeperError : public Error {
 public:
  /// Keeps the raw ZooKeeper result code and the path involved.
  ZooKeeperError(const std::string& message, int code, std::string path)
      : Error(message), code_(code), path_(std::move(path)) {}
  /// The raw ZooKeeper result code (ZNONODE, ZBADVERSION, ...).
  int code() const noexcept { return code_; }
  /// The path of the node the failing operation named.
  const std::string& path() const noexcept { return path_; }

 private:
  int code_;
  std::string path_;
};

/// The node does not exist.
class AVOUT_API NoNode : public ZooKeeperError {
 public:
  using ZooKeeperError::ZooKeeperError;
};

/// The node already exists.
class AVOUT_API NodeExists : public ZooKeeperError {
 public:
  using ZooKeeperError::ZooKeeperError;
};

/// The node's version did not match the expected one.
class AVOUT_API BadVersion : public ZooKeeperError {
 public:
  using ZooKeeperError::ZooKeeperError;
};

/// The node still has children.
class AVOUT_API NotEmpty : public ZooKeeperError {
 public:
  using ZooKeeperError::ZooKeeperError;
};

/// The session lacks the permission (ACL) or credentials the operation needs.
class AVOUT_API NoAuth : public ZooKeeperError {
 public:
  using ZooKeeperError::ZooKeeperError;
};

}  // namespace avout
