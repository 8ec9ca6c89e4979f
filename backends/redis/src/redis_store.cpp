#include "redis_connection.hpp"

#include <avout/errors.hpp>
#include <avout/redis.hpp>

namespace avout::redis {

using detail::Reply;

namespace {

// KEYS[1] the atom's hash; ARGV[1] the expected version ("" = absent), ARGV[2] the value.
constexpr std::string_view compare_and_set_script = R"lua(
local version = redis.call('HGET', KEYS[1], 'n')
if ARGV[1] == '' then
  if version then return 0 end
elseif version ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'n', tostring((tonumber(version) or 0) + 1))
return 1
)lua";

// KEYS[1] the point's key, KEYS[2] the ref's set of points; ARGV[1] value, ARGV[2] point.
constexpr std::string_view set_point_script = R"lua(
if redis.call('SET', KEYS[1], ARGV[1], 'NX') then
  redis.call('SADD', KEYS[2], ARGV[2])
  return 1
end
return 0
)lua";

constexpr std::string_view erase_point_script = R"lua(
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return 1
)lua";

std::string_view text_of(const redisReply* reply) { return {reply->str, reply->len}; }

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
    Reply reply = impl_->pool.command({"HMGET", key_, "v", "n"}, key_);
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
        reply->element[1]->type != REDIS_REPLY_STRING) {
      return Versioned{};
    }
    const auto value = text_of(reply->element[0]);
    return Versioned{to_bytes(value), std::string(text_of(reply->element[1]))};
  }

  bool compare_and_set(const Versioned& expected, Bytes next) override {
    impl_->check_size(next, key_);
    Reply reply = impl_->pool.command(
        {"EVAL", compare_and_set_script, "1", key_, expected.version, as_chars(next)}, key_);
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
    Reply reply = impl_->pool.command(
        {"EVAL", set_point_script, "2", key, points_key_, as_chars(value), point.id}, key);
    if (reply->type != REDIS_REPLY_INTEGER || reply->integer != 1) {
      throw BackendError(impl_->pool.endpoint().description + " " + key + ": point already stored");
    }
  }

  Bytes get(const Point& point) override {
    const std::string key = point_key(point);
    Reply reply = impl_->pool.command({"GET", key}, key);
    if (reply->type != REDIS_REPLY_STRING) {
      throw MissingPoint(impl_->pool.endpoint().description + " ref " + name_ +
                         ": no value at point " + point.id);
    }
    return to_bytes(text_of(reply.get()));
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
  keys.reserve(values.size());
  for (const auto& v : values) {
    auto& data = own_data(v.data, *impl_);
    keys.push_back(PointKeys{data.point_key(v.point), data.points_key(), v.point.id});
    impl_->check_size(v.value, keys.back().key);
  }
  std::vector<std::vector<std::string_view>> commands;
  commands.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    commands.push_back({"EVAL", set_point_script, "2", keys[i].key, keys[i].points_key,
                        as_chars(values[i].value), keys[i].id});
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
  std::vector<std::string_view> command{"MGET"};
  command.insert(command.end(), keys.begin(), keys.end());
  const Reply reply = impl_->pool.command(command, keys.front());
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements != keys.size()) {
    throw BackendError(description() + ": MGET of " + std::to_string(keys.size()) +
                       " ref values: unexpected reply");
  }
  values.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const redisReply* element = reply->element[i];
    if (element->type == REDIS_REPLY_STRING)
      values.emplace_back(to_bytes(text_of(element)));
    else
      values.emplace_back();
  }
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
