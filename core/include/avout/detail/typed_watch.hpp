#pragma once
// Turns a watch on values of T into the bytes watch the core keeps.

#include <avout/codec.hpp>

#include <functional>

namespace avout::detail {

/// Receives (old payload, new payload) when a watched value changes.
using BytesWatch = std::function<void(const Bytes&, const Bytes&)>;

/// Decodes (old, new) bytes and calls `watch` with the values.
template <Encodable T>
BytesWatch typed_watch(std::function<void(const T&, const T&)> watch) {
  return [watch = std::move(watch)](const Bytes& old_bytes, const Bytes& new_bytes) {
    watch(decode<T>(old_bytes), decode<T>(new_bytes));
  };
}

}  // namespace avout::detail
