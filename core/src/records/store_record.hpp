#pragma once
// What the store record of an atom, ref or agent holds (docs/architecture.md): the identity
// of the store that keeps its value, as plain text "scheme:name" that zkCli shows as it is.
// The first attach writes it; every later attach, in any process, reads it (runtime/
// store_records.cpp), so the decoder takes any bytes (fuzz/fuzz_store_record.cpp).

#include <avout/backend.hpp>
#include <avout/bytes.hpp>

#include <string>

namespace avout::detail {

/// InvalidName, naming `what`, unless `scheme` is a store scheme: a letter, then letters,
/// digits, '+', '-' or '.' (at most 32 characters).
void validate_store_scheme(const std::string& scheme, const std::string& what);
/// The record's data for `identity` ("redis:main").
Bytes encode_store_record(const StoreIdentity& identity);
/// The identity a record's `data` holds; CodecError naming `path` when the bytes are not
/// "scheme:name" with a valid scheme and name.
StoreIdentity decode_store_record(const Bytes& data, const std::string& path);

}  // namespace avout::detail
