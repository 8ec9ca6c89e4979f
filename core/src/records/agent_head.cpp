#include "records/agent_head.hpp"

#include "records/wire.hpp"

#include <cstdint>

namespace avout::detail {

namespace {

// Written first: a head of another format is refused, not misread.
constexpr std::uint8_t agent_head_format = 1;

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

}  // namespace avout::detail
