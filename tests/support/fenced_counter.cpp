#include "support/fenced_counter.hpp"

#include <hiredis/hiredis.h>

#include <stdexcept>
#include <string>

namespace avout::testing {
namespace {

// Both return -1 when refused; a read returns {count, the highest token seen before}. The
// token is raised at the read, not only at the write: a frozen holder that wakes up between
// a later holder's read and write must be refused too.
constexpr const char* read_script =
    "local t = tonumber(redis.call('HGET', KEYS[1], 'token') or '0') "
    "if tonumber(ARGV[1]) < t then return -1 end "
    "redis.call('HSET', KEYS[1], 'token', ARGV[1]) "
    "return {tonumber(redis.call('HGET', KEYS[1], 'count') or '0'), t}";
constexpr const char* write_script =
    "local t = tonumber(redis.call('HGET', KEYS[1], 'token') or '0') "
    "if tonumber(ARGV[1]) ~= t then return -1 end "
    "redis.call('HSET', KEYS[1], 'count', ARGV[2]) "
    "return 1";

struct Reply {
  redisReply* reply;
  ~Reply() {
    if (reply != nullptr) freeReplyObject(reply);
  }
};

}  // namespace

FencedCounter::FencedCounter(const std::string& url, std::string key) : key_(std::move(key)) {
  const auto rest = url.substr(url.find("://") + 3);
  const auto colon = rest.rfind(':');
  context_ = redisConnect(rest.substr(0, colon).c_str(), std::stoi(rest.substr(colon + 1)));
  if (context_ == nullptr || context_->err != 0) {
    const std::string why = context_ != nullptr ? context_->errstr : "no memory";
    if (context_ != nullptr) redisFree(context_);
    throw std::runtime_error("fenced counter " + key_ + ": cannot connect to " + url + ": " + why);
  }
}

FencedCounter::~FencedCounter() { redisFree(context_); }

std::optional<FencedCounter::Seen> FencedCounter::read(std::uint64_t token) {
  Reply r{
      static_cast<redisReply*>(redisCommand(context_, "EVAL %s 1 %s %llu", read_script,
                                            key_.c_str(), static_cast<unsigned long long>(token)))};
  if (r.reply == nullptr)
    throw std::runtime_error("fenced counter " + key_ + ": " + context_->errstr);
  if (r.reply->type == REDIS_REPLY_INTEGER) return std::nullopt;
  if (r.reply->type != REDIS_REPLY_ARRAY || r.reply->elements != 2) {
    throw std::runtime_error("fenced counter " + key_ + ": unexpected reply to a read");
  }
  return Seen{static_cast<long>(r.reply->element[0]->integer),
              static_cast<std::uint64_t>(r.reply->element[1]->integer)};
}

bool FencedCounter::write(std::uint64_t token, long count) {
  return eval(write_script, token, count) == 1;
}

long long FencedCounter::eval(const char* script, std::uint64_t token, long count) {
  Reply r{
      static_cast<redisReply*>(redisCommand(context_, "EVAL %s 1 %s %llu %ld", script, key_.c_str(),
                                            static_cast<unsigned long long>(token), count))};
  if (r.reply == nullptr)
    throw std::runtime_error("fenced counter " + key_ + ": " + context_->errstr);
  if (r.reply->type != REDIS_REPLY_INTEGER)
    throw std::runtime_error("fenced counter " + key_ + ": unexpected reply");
  return r.reply->integer;
}

long FencedCounter::count() {
  Reply r{static_cast<redisReply*>(redisCommand(context_, "HGET %s count", key_.c_str()))};
  if (r.reply == nullptr)
    throw std::runtime_error("fenced counter " + key_ + ": " + context_->errstr);
  return r.reply->type == REDIS_REPLY_STRING ? std::stol(std::string(r.reply->str, r.reply->len))
                                             : 0;
}

}  // namespace avout::testing
