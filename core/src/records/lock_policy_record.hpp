#pragma once
// What a read-write lock's folder node records: the writer policy of the first opener, as its
// name in plain text ("hard", "soft", "timed_soft"). Every later opener reads it and must name
// the same policy (locks/lock_core.cpp, claim_policy); bytes another program wrote there are
// taken as they are and shown in the mismatch.

#include <avout/bytes.hpp>
#include <avout/distributed_lock.hpp>

#include <string>

namespace avout::detail {

/// The name a folder node records for `policy`.
std::string writer_policy_name(WriterPolicy policy);
/// The folder node's data recording `policy`.
Bytes encode_writer_policy(WriterPolicy policy);
/// The policy name a folder node's `data` records (any bytes, as they are; empty: none yet).
std::string decode_writer_policy(const Bytes& data);

}  // namespace avout::detail
