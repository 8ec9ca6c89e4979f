#pragma once
// avout::inspect: a supported, read-only look into a deployment for tools and tests: the
// objects it holds, a ref's head, an atom's or agent's stored state, a ref's barging claim,
// and where each object's coordination nodes are. Records are decoded by the library. A
// name that is not a valid path ("", "x", "/a//b") is InvalidName, never a look elsewhere.

#include <avout/backend.hpp>
#include <avout/client.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace avout::inspect {

/// The kinds of objects a deployment lists.
enum class Kind { atoms, refs, agents, leases, locks };

/// Names of every object of `kind` in `client`'s deployment.
std::vector<std::string> names(Client& client, Kind kind);

/// An older committed version of a ref.
struct RefVersion {
  std::int64_t commit_zxid = 0;  ///< zxid of its commit
  Point point;                   ///< where its value is stored
};

/// A ref's head: its newest version, the older ones it keeps, and how many it keeps.
struct RefHead {
  Point newest;                     ///< where the newest value is stored
  std::int64_t commit_zxid = 0;     ///< zxid of the newest commit
  std::vector<RefVersion> history;  ///< older versions, newest first
  std::uint32_t keep = 0;           ///< older versions commits keep
};

/// The head of the ref `name`; nullopt when the ref does not exist.
std::optional<RefHead> ref_head(Client& client, const std::string& name);

/// The transaction that claims a ref (transactions.md rule 10).
struct TagOwner {
  std::int64_t session = 0;           ///< the session that started it
  std::int64_t first_read_point = 0;  ///< read point of its first attempt
  std::uint64_t counter = 0;          ///< its per-client sequence number
};

/// Who claims the ref `name`; nullopt when nobody does (or the ref does not exist).
std::optional<TagOwner> tag_owner(Client& client, const std::string& name);

/// An atom's stored state.
struct AtomValue {
  Bytes payload;             ///< the encoded value
  std::uint64_t writes = 0;  ///< writes so far
};

/// The atom `name` held in `store`; nullopt when it holds no value there.
std::optional<AtomValue> atom(Client& client, Store& store, const std::string& name);

/// An agent's head.
struct AgentHead {
  Point point;                       ///< where its value is stored
  std::optional<std::string> error;  ///< set once an action failed, until restart
};

/// The head of the agent `name`; nullopt when the agent does not exist.
std::optional<AgentHead> agent_head(Client& client, const std::string& name);

/// The head node of the ref `name`.
std::string ref_head_path(const Client& client, const std::string& name);
/// The barging tag node of the ref `name`.
std::string tag_path(const Client& client, const std::string& name);
/// The parent of the commit outcome markers.
std::string markers_path(const Client& client);
/// The outcome marker node of the commit attempt `attempt`.
std::string marker_path(const Client& client, const std::string& attempt);
/// The head node of the agent `name`.
std::string agent_head_path(const Client& client, const std::string& name);
/// The send queue node of the agent `name`.
std::string agent_queue_path(const Client& client, const std::string& name);
/// The folder of the lock `name` (holding "writers"), or of the read-write lock `name`
/// (holding "writers", "readers" and "gates").
std::string lock_path(const Client& client, const std::string& name, bool read_write = false);
/// The token node of the lease lock `name`.
std::string lease_path(const Client& client, const std::string& name);

}  // namespace avout::inspect
