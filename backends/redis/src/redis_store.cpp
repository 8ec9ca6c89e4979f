#include "redis_connection.hpp"

#include <avout/errors.hpp>
#include <avout/redis.hpp>
#include <avout/stored_value.hpp>

#include <optional>

namespace avout::redis {

using detail::Reply;

namespace {

// Values are kept readable (docs/stored-layout.md): an atom's hash holds the payload under
// 'value', its format under 'format' and the write sequence and writer ids under 'meta',
// beside the version 'n'; a point's hash holds 'value' and 'format'. The old layout kept the
// core's bytes whole: an atom's field 'v', a point's plain string. Writes remove 'v', so a
// hash holding 'v' was last written in the old layout.

// KEYS[1] the atom's hash; ARGV[1] the expected version ("" = absent), ARGV[2] the payload,
// ARGV[3] its format, ARGV[4] the bookkeeping.
constexpr std::string_view compare_and_set_script = R"lua(
local version = redis.call('HGET', KEYS[1], 'n')
if ARGV[1] == '' then
  if version then return 0 end
elseif version ~= ARGV[1] then
  return 0
end
redis.call('HDEL', KEYS[1], 'v')
redis.call('HSET', KEYS[1], 'value', ARGV[2], 'format', ARGV[3], 'meta', ARGV[4],
           'n', tostring((tonumber(version) or 0) + 1))
return 1
)lua";

// KEYS[1] the point's key, KEYS[2] the ref's set of points; ARGV[1] payload, ARGV[2] point,
// ARGV[3] the payload's format.
constexpr std::string_view set_point_script = R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'value', ARGV[1], 'format', ARGV[3])
redis.call('SADD', KEYS[2], ARGV[2])
return 1
)lua";

// KEYS: point keys. Per key: {payload, format} (the new layout), {bytes} (the old one's
// string) or nil (no value).
constexpr std::string_view get_points_script = R"lua(
local found = {}
for i, key in ipairs(KEYS) do
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'hash' then
    found[i] = redis.call('HMGET', key, 'value', 'format')
  elseif kind == 'string' then
    found[i] = {redis.call('GET', key)}
  else
    found[i] = false
  end
end
return found
)lua";

constexpr std::string_view erase_point_script = R"lua(
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return 1
)lua";

std::string_view text_of(const redisReply* reply) { return {reply->str, reply->len}; }

// The text of a string reply; empty for nil.
std::string_view text_or_empty(const redisReply* reply) {
  return reply->type == REDIS_REPLY_STRING ? text_of(reply) : std::string_view();
}

// The bytes of a point as get_points_script found them; nullopt when it has no value.
std::optional<Bytes> point_value(const redisReply* found) {
  if (found->type != REDIS_REPLY_ARRAY || found->elements == 0) return std::nullopt;
  if (found->elements == 1) return to_bytes(text_or_empty(found->element[0]));  // old layout
  return join_stored_value(StoredKind::point,
                           StoredValue{std::string(text_or_empty(found->element[1])), "",
                                       to_bytes(text_or_empty(found->element[0]))});
}

}  // namespace

struct detail::StoreState {
  StoreOptions options;
  detail::Pool pool;
  StoreState(StoreOptions given, detail::Endpoint endpoint)
      : options(std::move(given)), pool(std::move(endpoint), options.pool_size) {}

  void check_size(const Bytes& value, const std::string& key) const {
    require_fits(value.size(), options.max_value_size, pool.endpoint().description + " " + key);
  }
};

namespace {

class RedisAtomState final : public AtomState {
 public:
  RedisAtomState(std::shared_ptr<detail::StoreState> impl, std::string key)
      : impl_(std::move(impl)), key_(std::move(key)) {}

  Versioned get() override {
    Reply reply = impl_->pool.command({"HMGET", key_, "n", "v", "value", "format", "meta"}, key_);
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 5 ||
        reply->element[0]->type != REDIS_REPLY_STRING) {
      return Versioned{};
    }
    std::string version(text_of(reply->element[0]));
    if (reply->element[1]->type == REDIS_REPLY_STRING)  // last written in the old layout
      return Versioned{to_bytes(text_of(reply->element[1])), std::move(version)};
    return Versioned{join_stored_value(StoredKind::atom,
                                       StoredValue{std::string(text_or_empty(reply->element[3])),
                                                   std::string(text_or_empty(reply->element[4])),
                                                   to_bytes(text_or_empty(reply->element[2]))}),
                     std::move(version)};
  }

  bool compare_and_set(const Versioned& expected, Bytes next) override {
    impl_->check_size(next, key_);
    const StoredValue parts = split_stored_value(StoredKind::atom, next);
    Reply reply = impl_->pool.command({"EVAL", compare_and_set_script, "1", key_, expected.version,
                                       as_chars(parts.payload), parts.format, parts.bookkeeping},
                                      key_);
    return reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
  }

 private:
  std::shared_ptr<detail::StoreState> impl_;
  std::string key_;
};

class RedisReferenceData final : public ReferenceData {
 public:
  RedisReferenceData(std::shared_ptr<detail::StoreState> impl, std::string name)
      : impl_(std::move(impl)),
        name_(std::move(name)),
        points_key_(impl_->options.key_prefix + "ref-points:" + name_) {}

  std::string name() const override { return name_; }

  void set(Bytes value, const Point& point) override {
    const std::string key = point_key(point);
    impl_->check_size(value, key);
    const StoredValue parts = split_stored_value(StoredKind::point, value);
    Reply reply = impl_->pool.command({"EVAL", set_point_script, "2", key, points_key_,
                                       as_chars(parts.payload), point.id, parts.format},
                                      key);
    if (reply->type != REDIS_REPLY_INTEGER || reply->integer != 1) {
      throw BackendError(impl_->pool.endpoint().description + " " + key + ": point already stored");
    }
  }

  Bytes get(const Point& point) override {
    const std::string key = point_key(point);
    Reply reply = impl_->pool.command({"EVAL", get_points_script, "1", key}, key);
    std::optional<Bytes> found;
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 1)
      found = point_value(reply->element[0]);
    if (!found) {
      throw MissingPoint(impl_->pool.endpoint().description + " ref " + name_ +
                         ": no value at point " + point.id);
    }
    return std::move(*found);
  }

  void erase(const Point& point) override {
    const std::string key = point_key(point);
    impl_->pool.command({"EVAL", erase_point_script, "2", key, points_key_, point.id}, key);
  }

  void erase_values(std::span<const PointErasure> erasures) override;

  /// The key of the value at `point`.
  std::string point_key(const Point& point) const {
    return impl_->options.key_prefix + "ref:" + name_ + ":" + point.id;
  }
  /// The key of the set listing the ref's points.
  const std::string& points_key() const { return points_key_; }
  /// Whether this ref belongs to the store whose state is `impl`.
  bool made_by(const detail::StoreState* impl) const { return impl_.get() == impl; }

  std::vector<Point> points() override {
    Reply reply = impl_->pool.command({"SMEMBERS", points_key_}, points_key_);
    std::vector<Point> found;
    for (std::size_t i = 0; i < reply->elements; ++i) {
      found.push_back(Point{std::string(text_of(reply->element[i]))});
    }
    return found;
  }

 private:
  std::shared_ptr<detail::StoreState> impl_;
  std::string name_;
  std::string points_key_;
};

// The ref data of a batch element, which must have been made by the store with state `impl`.
RedisReferenceData& own_data(ReferenceData* data, const detail::StoreState& impl) {
  auto* own = dynamic_cast<RedisReferenceData*>(data);
  if (own == nullptr || !own->made_by(&impl)) {
    throw BackendError(impl.pool.endpoint().description + ": a batch holds ref " +
                       (data ? data->name() : std::string("(null)")) +
                       ", which this store did not make");
  }
  return *own;
}

// One script call per point, pipelined: (key, points key, point id) each, owned here so that
// the commands' string views stay valid.
struct PointKeys {
  std::string key;
  std::string points_key;
  std::string id;
};

// Store::erase_values, for the store with state `impl` (which the version sets keep alive).
void erase_batch(detail::StoreState& impl, std::span<const PointErasure> erasures) {
  if (erasures.empty()) return;
  std::vector<PointKeys> keys;
  keys.reserve(erasures.size());
  for (const auto& e : erasures) {
    auto& data = own_data(e.data, impl);
    keys.push_back(PointKeys{data.point_key(e.point), data.points_key(), e.point.id});
  }
  std::vector<std::vector<std::string_view>> commands;
  commands.reserve(keys.size());
  for (const auto& k : keys) {
    commands.push_back({"EVAL", erase_point_script, "2", k.key, k.points_key, k.id});
  }
  const auto replies =
      impl.pool.pipeline(commands, "erase " + std::to_string(keys.size()) + " ref values");
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (replies[i]->type == REDIS_REPLY_ERROR) {
      throw StoreRefused(impl.pool.endpoint().description + ": EVAL " + keys[i].key + ": " +
                         std::string(text_of(replies[i].get())));
    }
  }
}

}  // namespace

void Store::set_values(std::span<const PointValue> values) {
  if (values.empty()) return;
  std::vector<PointKeys> keys;
  std::vector<StoredValue> parts;
  keys.reserve(values.size());
  parts.reserve(values.size());
  for (const auto& v : values) {
    auto& data = own_data(v.data, *impl_);
    keys.push_back(PointKeys{data.point_key(v.point), data.points_key(), v.point.id});
    impl_->check_size(v.value, keys.back().key);
    parts.push_back(split_stored_value(StoredKind::point, v.value));
  }
  std::vector<std::vector<std::string_view>> commands;
  commands.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    commands.push_back({"EVAL", set_point_script, "2", keys[i].key, keys[i].points_key,
                        as_chars(parts[i].payload), keys[i].id, parts[i].format});
  }
  const auto replies =
      impl_->pool.pipeline(commands, "set " + std::to_string(values.size()) + " ref values");
  // Every reply is read before judging any: each script ran (or was refused) on its own.
  for (std::size_t i = 0; i < replies.size(); ++i) {
    const redisReply* reply = replies[i].get();
    if (reply->type == REDIS_REPLY_ERROR) {
      throw StoreRefused(description() + ": EVAL " + keys[i].key + ": " +
                         std::string(text_of(reply)));
    }
    if (reply->type != REDIS_REPLY_INTEGER || reply->integer != 1) {
      throw BackendError(description() + " " + keys[i].key + ": point already stored");
    }
  }
}

void RedisReferenceData::erase_values(std::span<const PointErasure> erasures) {
  erase_batch(*impl_, erasures);
}

void Store::erase_values(std::span<const PointErasure> erasures) { erase_batch(*impl_, erasures); }

std::vector<std::optional<Bytes>> Store::get_values(std::span<const PointRead> reads) {
  std::vector<std::optional<Bytes>> values;
  if (reads.empty()) return values;
  std::vector<std::string> keys;
  keys.reserve(reads.size());
  for (const auto& r : reads) keys.push_back(own_data(r.data, *impl_).point_key(r.point));
  const std::string count = std::to_string(keys.size());
  std::vector<std::string_view> command{"EVAL", get_points_script, count};
  command.insert(command.end(), keys.begin(), keys.end());
  const Reply reply = impl_->pool.command(command, keys.front());
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements != keys.size()) {
    throw BackendError(description() + ": read of " + count + " ref values: unexpected reply");
  }
  values.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) values.push_back(point_value(reply->element[i]));
  return values;
}

Store::Store(const std::string& url) : Store(StoreOptions{.url = url}) {}

Store::Store(StoreOptions options) {
  auto endpoint = detail::parse_url(options.url);
  validate_store_name(options.name, "redis store");
  if (!endpoint.name.empty() && endpoint.name != options.name) {
    if (options.name != StoreOptions{}.name) {
      throw InvalidName("redis store: the URL's name= and StoreOptions::name differ");
    }
    options.name = endpoint.name;
  }
  endpoint.connect_timeout = options.connect_timeout;
  endpoint.command_timeout = options.command_timeout;
  impl_ = std::make_shared<detail::StoreState>(std::move(options), std::move(endpoint));
}

Store::~Store() = default;

std::string Store::description() const { return impl_->pool.endpoint().description; }

StoreIdentity Store::identity() const { return {"redis", impl_->options.name}; }

std::size_t Store::max_value_size() const { return impl_->options.max_value_size; }

std::unique_ptr<AtomState> Store::atom_state(const std::string& name) {
  return std::make_unique<RedisAtomState>(impl_, impl_->options.key_prefix + "atom:" + name);
}

std::unique_ptr<ReferenceData> Store::reference_data(const std::string& name) {
  return std::make_unique<RedisReferenceData>(impl_, name);
}

std::shared_ptr<detail::Pool> Store::shared_pool() const {
  return std::shared_ptr<detail::Pool>(impl_, &impl_->pool);  // keeps the whole store state alive
}

const StoreOptions& Store::options() const { return impl_->options; }

}  // namespace avout::redis
