#pragma once
// The named send record: the data of a named action's send node under
// <root>/agents/queues<name> ("s-n<uuid>-<sequence>"), written by its sender and read by
// every process that defined the name and may run it (docs/recipes.md, "Agents"). Fuzzed by
// fuzz/fuzz_named_send.cpp.

#include <avout/bytes.hpp>

#include <string>

namespace avout::detail {

/// What a named send node holds.
struct NamedSend {
  std::string action;     ///< the name the action was defined under
  Bytes arguments;        ///< its encoded arguments
  bool blocking = false;  ///< sent with send_off: runs on the growing pool
};

/// Encodes a named send of `action` with `arguments` (copied once, into the result).
Bytes encode_named_send(const std::string& action, const Bytes& arguments, bool blocking);
/// Decodes a named send; CodecError naming `path` when malformed or of another format.
NamedSend decode_named_send(const Bytes& bytes, const std::string& path);

}  // namespace avout::detail
