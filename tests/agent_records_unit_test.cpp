// The agent records (core/src/records: the head and the named send), without a server: round
// trips, and CodecError for truncated, garbage or other-format bytes, naming the node.
#include "records/agent_head.hpp"
#include "records/named_send.hpp"

#include <avout/errors.hpp>

#include <doctest/doctest.h>

#include <string>

namespace {

using avout::Bytes;
using avout::CodecError;
using avout::detail::AgentHead;
using avout::detail::decode_agent_head;
using avout::detail::decode_named_send;
using avout::detail::encode_agent_head;
using avout::detail::encode_named_send;

AgentHead head_round_trip(const AgentHead& head) {
  return decode_agent_head(encode_agent_head(head), "/agents/heads/x");
}

// The message of the CodecError `decode` throws, or "" when it throws none.
template <typename Decode>
std::string codec_error(const Decode& decode) {
  try {
    decode();
  } catch (const CodecError& error) {
    return error.what();
  }
  return "";
}

std::string named_send_error(const Bytes& bytes) {
  return codec_error([&] { (void)decode_named_send(bytes, "/agents/queues/x/s-n1-0000000001"); });
}

std::string head_error(const Bytes& bytes) {
  return codec_error([&] { (void)decode_agent_head(bytes, "/agents/heads/x"); });
}

}  // namespace

TEST_CASE("an agent head round-trips, with and without an error") {
  const AgentHead fine{avout::Point{"point-1"}, std::nullopt};
  const auto again = head_round_trip(fine);
  CHECK(again.point == fine.point);
  CHECK(!again.error);
  const AgentHead failed{avout::Point{"point-2"}, std::string("boom\0with nul", 13)};
  const auto failed_again = head_round_trip(failed);
  CHECK(failed_again.point == failed.point);
  CHECK(failed_again.error == failed.error);
  const AgentHead empty{avout::Point{""}, std::string()};
  CHECK(head_round_trip(empty).error == std::string());
}

TEST_CASE("a malformed agent head throws CodecError naming its node") {
  const Bytes good = encode_agent_head(AgentHead{avout::Point{"p"}, std::string("e")});
  for (std::size_t size = 0; size < good.size(); ++size) {  // every truncation
    const auto message = head_error(Bytes(good.begin(), good.begin() + static_cast<long>(size)));
    CHECK(message.find("agent head /agents/heads/x") != std::string::npos);
  }
  Bytes trailing = good;
  trailing.push_back(0);
  CHECK(head_error(trailing).find("trailing bytes") != std::string::npos);
  Bytes other_format = good;
  other_format[0] = 2;
  CHECK(head_error(other_format).find("unknown format") != std::string::npos);
  Bytes bad_flag = encode_agent_head(AgentHead{avout::Point{"p"}, std::nullopt});
  bad_flag.back() = 7;
  CHECK(head_error(bad_flag).find("error flag") != std::string::npos);
  CHECK(head_error(Bytes(64, 0xff)) != "");
}

TEST_CASE("a named send round-trips, its arguments kept byte for byte") {
  const Bytes arguments{0, 1, 2, 255, 0};
  for (const bool blocking : {false, true}) {
    const Bytes node = encode_named_send("add", arguments, blocking);
    const auto send = decode_named_send(node, "/q/s-n1-0000000001");
    CHECK(send.action == "add");
    CHECK(send.arguments == arguments);
    CHECK(send.blocking == blocking);
    CHECK(encode_named_send(send.action, send.arguments, send.blocking) == node);
  }
  const auto bare = decode_named_send(encode_named_send("", {}, false), "/q/s-n1-0000000001");
  CHECK(bare.action.empty());
  CHECK(bare.arguments.empty());
}

TEST_CASE("a malformed named send throws CodecError naming its node") {
  const Bytes good = encode_named_send("add", Bytes{9, 9}, true);
  const std::size_t header = 2 + 8 + 3;  // format, flag, name's length, name: then arguments
  for (std::size_t size = 0; size < header; ++size) {  // every cut before the arguments
    const auto message =
        named_send_error(Bytes(good.begin(), good.begin() + static_cast<long>(size)));
    CHECK(message.find("agent send /agents/queues/x/s-n1-0000000001") != std::string::npos);
  }
  Bytes other_format = good;
  other_format[0] = 2;  // a newer format: only its sender runs it
  CHECK(named_send_error(other_format).find("unknown format") != std::string::npos);
  Bytes bad_flag = good;
  bad_flag[1] = 2;
  CHECK(named_send_error(bad_flag).find("blocking flag") != std::string::npos);
  Bytes huge_name = good;
  huge_name[9] = 0x7f;  // the name's length says far more than is there
  CHECK(named_send_error(huge_name).find("truncated") != std::string::npos);
  CHECK(named_send_error(Bytes(64, 0xff)) != "");
}

TEST_CASE("agent head: a removed agent's tombstone is one byte that decodes as Deleted") {
  const Bytes tombstone = avout::detail::encode_agent_tombstone();
  CHECK(tombstone == Bytes{2});
  CHECK(avout::detail::is_agent_tombstone(tombstone));
  CHECK_THROWS_AS((void)decode_agent_head(tombstone, "/agents/heads/x"), avout::Deleted);
  CHECK_FALSE(avout::detail::is_agent_tombstone(encode_agent_head(AgentHead{})));
  CHECK(codec_error([&] { (void)decode_agent_head(Bytes{2, 0}, "/agents/heads/x"); }) != "");
}
