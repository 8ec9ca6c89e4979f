#pragma once
// What a semaphore's folder node records: its permit count N, which every opener must name
// (the first opener writes it into the folder's empty data). Pure: bytes in, bytes out.

#include "queue/queue_names.hpp"

#include <avout/bytes.hpp>

#include <cstddef>
#include <optional>

namespace avout::detail {

/// The record of `permits` ("permits=<N>").
Bytes encode_permits(std::size_t permits);

/// The permit count a record holds; nullopt for bytes that are not such a record.
std::optional<std::size_t> decode_permits(const Bytes& record);

/// A semaphore's permit node: "q-<16 hex digits>-<sequence>".
inline NodeKind permit_kind() { return NodeKind{"q", 16}; }

}  // namespace avout::detail
