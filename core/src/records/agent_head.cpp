#include "records/agent_head.hpp"

#include "records/wire.hpp"

#include <avout/errors.hpp>

#include <cstdint>

namespace avout::detail {

namespace {

// Written first: a head of another format is refused, not misread.
constexpr std::uint8_t agent_head_format = 1;
constexpr std::uint8_t agent_tombstone_format = 2;  // the whole tombstone: one byte

}  // namespace

Bytes encode_agent_head(const AgentHead& head) {
  WireWriter out;
  out.u8(agent_head_format);
  out.text(head.point.id);
  out.u8(head.error ? 1 : 0);
  if (head.error) out.text(*head.error);
  return out.take();
}

AgentHead decode_agent_head(const Bytes& bytes, const std::string& path) {
  if (is_agent_tombstone(bytes)) throw Deleted("agent head " + path + ": the agent was deleted");
  WireReader in(bytes, "agent head " + path);
  if (in.u8() != agent_head_format) in.fail("unknown format");
  AgentHead head;
  head.point.id = in.text();
  const auto failed = in.u8();
  if (failed > 1) in.fail("error flag");
  if (failed == 1) head.error = in.text();
  if (!in.done()) in.fail("trailing bytes");
  return head;
}

Bytes encode_agent_tombstone() { return Bytes{agent_tombstone_format}; }

bool is_agent_tombstone(const Bytes& bytes) {
  return bytes.size() == 1 && bytes[0] == agent_tombstone_format;
}

}  // namespace avout::detail
