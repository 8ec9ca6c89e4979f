#pragma once
// The agent head record: the data of <root>/agents/heads<name>, read by every process that
// uses the agent (docs/recipes.md, "Agents"). Fuzzed by fuzz/fuzz_agent_head.cpp.

#include <avout/backend.hpp>
#include <avout/bytes.hpp>

#include <optional>
#include <string>

namespace avout::detail {

/// The data of an agent's head node.
struct AgentHead {
  Point point;                       ///< where the current value is stored
  std::optional<std::string> error;  ///< set once an action failed, until restart
};

/// Encodes an agent head.
Bytes encode_agent_head(const AgentHead& head);
/// Decodes an agent head; CodecError naming `path` when malformed, Deleted when it is the
/// tombstone of a removed agent.
AgentHead decode_agent_head(const Bytes& bytes, const std::string& path);
/// The head of a removed agent, kept so its name is never reused silently.
Bytes encode_agent_tombstone();
/// True when `bytes` is an agent head's tombstone.
bool is_agent_tombstone(const Bytes& bytes);

}  // namespace avout::detail
