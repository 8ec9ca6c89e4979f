#include "records/named_send.hpp"

#include "records/wire.hpp"

#include <cstdint>
#include <utility>

namespace avout::detail {

namespace {

// Written first: a send of a newer format is refused here (only its sender runs it then).
constexpr std::uint8_t named_send_format = 1;

}  // namespace

Bytes encode_named_send(const std::string& action, const Bytes& arguments, bool blocking) {
  WireWriter node;
  node.u8(named_send_format);
  node.u8(blocking ? 1 : 0);
  node.text(action);
  node.raw(arguments);
  return node.take();
}

NamedSend decode_named_send(const Bytes& bytes, const std::string& path) {
  WireReader in(bytes, "agent send " + path);
  if (in.u8() != named_send_format) in.fail("unknown format");
  const auto blocking = in.u8();
  if (blocking > 1) in.fail("blocking flag");
  std::string action = in.text();
  return NamedSend{std::move(action), in.rest(), blocking == 1};
}

}  // namespace avout::detail
