#pragma once
// A plain counter kept in Redis for lock tests: the holder of a lock reads it and writes it
// back plus one (a read-modify-write only the lock makes safe), fenced by the lock's token so
// that a holder whose lock was lost while it was frozen cannot write over a later holder's
// increment. Redis sees the tokens: a read with a token below the highest one seen is
// refused, and so is a write whose token is no longer the highest.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

struct redisContext;

namespace avout::testing {

/// One connection to a counter (not thread-safe: one per thread).
class FencedCounter {
 public:
  /// Connects to the Redis at `url` (redis://host:port) for the counter `key`.
  FencedCounter(const std::string& url, std::string key);
  ~FencedCounter();
  FencedCounter(const FencedCounter&) = delete;
  FencedCounter& operator=(const FencedCounter&) = delete;

  /// What a read saw: the count, and the highest token before this read's.
  struct Seen {
    long count;
    std::uint64_t previous_token;
  };
  /// Reads the count as the holder of `token`; nullopt when a later token was seen already.
  std::optional<Seen> read(std::uint64_t token);
  /// Writes `count` as the holder of `token`; false when a later token was seen meanwhile.
  bool write(std::uint64_t token, long count);
  /// The count (no fencing: for the final check).
  long count();

 private:
  long long eval(const char* script, std::uint64_t token, long count);
  redisContext* context_;
  std::string key_;
};

}  // namespace avout::testing
