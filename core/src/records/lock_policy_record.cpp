#include "records/lock_policy_record.hpp"

namespace avout::detail {

std::string writer_policy_name(WriterPolicy policy) {
  switch (policy) {
    case WriterPolicy::hard: return "hard";
    case WriterPolicy::soft: return "soft";
    case WriterPolicy::timed_soft: return "timed_soft";
  }
  return "unknown";
}

Bytes encode_writer_policy(WriterPolicy policy) { return to_bytes(writer_policy_name(policy)); }

std::string decode_writer_policy(const Bytes& data) {
  return std::string(data.begin(), data.end());
}

}  // namespace avout::detail
