// Leases in Redis: per key a string holding the token, set with PX, so Redis's own timer
// judges expiry; a per-key counter (never expiring, never below the server's clock in
// microseconds) makes the tokens. Every operation
// is one Lua script, so the check and the change cannot be split by another client.
#include "redis_connection.hpp"

#include <avout/errors.hpp>
#include <avout/redis.hpp>

#include <string_view>

namespace avout::redis {

namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// KEYS[1] the lease, KEYS[2] the key's token counter; ARGV[1] duration (ms).
// Returns {1, token} when taken, {0, remaining ms} when held.
// A token is the counter plus one, but never below the server's clock in microseconds: a
// Redis that lost the counter (no persistence, a failover to a replica that missed it)
// still hands out tokens above every earlier one, as long as its clock never went back.
// Lua numbers are doubles, exact below 2^53 (microseconds until the year 2255); '%.0f'
// writes them without an exponent.
constexpr std::string_view acquire_script = R"lua(
local remaining = redis.call('PTTL', KEYS[1])
if remaining ~= -2 then return {0, remaining} end
local now = redis.call('TIME')
local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
local token = math.max((tonumber(redis.call('GET', KEYS[2])) or 0) + 1, floor)
local text = string.format('%.0f', token)
redis.call('SET', KEYS[2], text)
redis.call('SET', KEYS[1], text, 'NX', 'PX', ARGV[1])
return {1, token}
)lua";

// KEYS[1] the lease; ARGV[1] the token, ARGV[2] 'release' or a new duration (ms).
// Returns 1 when the token still held the key and the change was made, else 0.
constexpr std::string_view token_checked_script = R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == 'release' then
  redis.call('DEL', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
)lua";

class RedisLeaseStrategy final : public LeaseStrategy {
 public:
  RedisLeaseStrategy(std::shared_ptr<detail::Pool> pool, const std::string& prefix,
                     std::string name)
      : pool_(std::move(pool)),
        // Keys may not hold '/', so the part after the last '/' is the key: no two
        // (name, key) pairs share a Redis key.
        lease_prefix_(prefix + "lease:" + name + "/"),
        counter_prefix_(prefix + "lease-token:" + name + "/"),
        name_(std::move(name)) {}

  std::string description() const override {
    return pool_->endpoint().description + " lease lock " + name_;
  }

  std::optional<Lease> acquire(const std::string& key, milliseconds duration,
                               steady_clock::time_point deadline) override {
    const std::string lease_key = lease_prefix_ + key;
    const std::string counter_key = counter_prefix_ + key;
    const std::string ms = std::to_string(duration.count());
    return avout::detail::poll_for_lease(deadline, [&](milliseconds& retry_in) {
      const auto sent = steady_clock::now();
      auto reply =
          pool_->command({"EVAL", acquire_script, "2", lease_key, counter_key, ms}, lease_key);
      const auto [taken, number] = pair_of(reply.get(), lease_key);
      if (!taken) {
        if (number > 0) retry_in = milliseconds(number);  // a lease about to end
        return std::optional<Lease>();
      }
      return std::optional<Lease>(Lease{key, static_cast<std::uint64_t>(number), sent + duration});
    });
  }

  bool release(const Lease& lease) override { return token_checked(lease, "release"); }

  bool renew(Lease& lease, milliseconds duration) override {
    const auto sent = steady_clock::now();
    if (!token_checked(lease, std::to_string(duration.count()))) return false;
    lease.expires = sent + duration;
    return true;
  }

 private:
  bool token_checked(const Lease& lease, const std::string& change) {
    const std::string lease_key = lease_prefix_ + lease.key;
    auto reply = pool_->command(
        {"EVAL", token_checked_script, "1", lease_key, std::to_string(lease.token), change},
        lease_key);
    return reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
  }

  std::pair<bool, long long> pair_of(const redisReply* reply, const std::string& key) const {
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
        reply->element[0]->type != REDIS_REPLY_INTEGER ||
        reply->element[1]->type != REDIS_REPLY_INTEGER) {
      throw BackendError(pool_->endpoint().description + " " + key +
                         ": unexpected reply to the lease script");
    }
    return {reply->element[0]->integer == 1, reply->element[1]->integer};
  }

  std::shared_ptr<detail::Pool> pool_;
  std::string lease_prefix_;
  std::string counter_prefix_;
  std::string name_;
};

}  // namespace

LeaseLock lease_lock(Store& store, const std::string& name) {
  validate_lease_name(name);
  return LeaseLock(
      std::make_shared<RedisLeaseStrategy>(store.shared_pool(), store.options().key_prefix, name));
}

}  // namespace avout::redis
