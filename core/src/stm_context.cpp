#include "node_cache.hpp"
#include "wire.hpp"

#include <avout/detail/atom_core.hpp>
#include <avout/detail/stm.hpp>
#include <avout/errors.hpp>

#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <unistd.h>

#include <cstdio>

namespace avout::detail {

namespace {
constexpr std::uint8_t head_format = 2;
constexpr std::uint8_t tag_format = 1;
constexpr std::size_t session_hex_digits = 16;
constexpr std::size_t cached_values = 4096;
}  // namespace

Bytes encode_head(const HeadRecord& record) {
  WireWriter out;
  out.u8(head_format);
  out.text(record.newest.id);
  out.u64(record.keep);
  out.u64(record.history.size());
  for (const auto& entry : record.history) {
    out.u64(static_cast<std::uint64_t>(entry.zxid));
    out.text(entry.point.id);
  }
  return out.take();
}

HeadRecord decode_head(const Bytes& bytes, const std::string& path) {
  WireReader in(bytes, "ref head " + path);
  if (in.u8() != head_format) in.fail("unknown format");
  HeadRecord record;
  record.newest.id = in.text();
  const std::uint64_t keep = in.u64();
  if (keep > 1u << 20) in.fail("kept history");
  record.keep = static_cast<std::uint32_t>(keep);
  const std::uint64_t count = in.u64();
  if (count > bytes.size()) in.fail("history count");
  for (std::uint64_t i = 0; i < count; ++i) {
    HeadEntry entry;
    entry.zxid = static_cast<std::int64_t>(in.u64());
    entry.point.id = in.text();
    record.history.push_back(std::move(entry));
  }
  if (!in.done()) in.fail("trailing bytes");
  return record;
}

Bytes encode_tag(const TransactionAge& age) {
  WireWriter out;
  out.u8(tag_format);
  out.u64(static_cast<std::uint64_t>(age.first_read_point));
  out.u64(static_cast<std::uint64_t>(age.session));
  out.u64(age.counter);
  return out.take();
}

std::optional<TransactionAge> decode_tag(const Bytes& bytes, const std::string& path) {
  if (bytes.empty()) return std::nullopt;
  WireReader in(bytes, "barging tag " + path);
  if (in.u8() != tag_format) in.fail("unknown format");
  TransactionAge age;
  age.first_read_point = static_cast<std::int64_t>(in.u64());
  age.session = static_cast<std::int64_t>(in.u64());
  age.counter = in.u64();
  if (!in.done()) in.fail("trailing bytes");
  return age;
}

namespace {
std::string session_hex(std::int64_t session) {
  char text[session_hex_digits + 1];
  std::snprintf(text, sizeof text, "%016llx",
                static_cast<unsigned long long>(static_cast<std::uint64_t>(session)));
  return text;
}
}  // namespace

std::optional<std::int64_t> writer_of(const std::string& id) {
  if (id.size() <= session_hex_digits || id[session_hex_digits] != '-') return std::nullopt;
  std::uint64_t session = 0;
  for (std::size_t i = 0; i < session_hex_digits; ++i) {
    const char c = id[i];
    int digit = 0;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else return std::nullopt;
    session = session * 16 + static_cast<std::uint64_t>(digit);
  }
  return static_cast<std::int64_t>(session);
}

Point StmContext::new_point() {
  // A fresh generator per process: fork() would otherwise hand a child its parent's state.
  thread_local pid_t seeded_for = getpid();
  thread_local auto generator = std::make_unique<boost::uuids::random_generator>();
  if (seeded_for != getpid()) {
    generator = std::make_unique<boost::uuids::random_generator>();
    seeded_for = getpid();
  }
  return Point{session_hex(session_.session_id()) + "-" + boost::uuids::to_string((*generator)())};
}

std::string StmContext::session_node(std::int64_t session) const {
  return sessions_root_ + "/" + session_hex(session);
}

void StmContext::announce_session() {
  const std::uint64_t generation = session_.generation();
  std::lock_guard lock(announce_mutex_);
  if (announced_generation_ == generation) return;
  try {
    session_.create(session_node(session_.session_id()), {}, CreateMode::ephemeral);
  } catch (const NodeExists&) {
  }
  announced_generation_ = generation;
}

TransactionAge StmContext::new_age(std::int64_t read_point) {
  return TransactionAge{read_point, session_.session_id(), ++ages_};
}

bool StmContext::alive(const TransactionAge& age) {
  if (age.session == session_.session_id()) return true;
  return session_.exists(session_node(age.session)).has_value();
}

RefCore::RefCore(std::string name, std::shared_ptr<ReferenceData> data,
                 std::size_t max_value_size, StmContext& stm)
    : name_(std::move(name)),
      head_path_(stm.head_path(name_)),
      data_(std::move(data)),
      max_value_size_(max_value_size),
      stm_(stm) {
  // The watcher's reads must not reach back into this object (it may die first).
  watcher_ = std::make_shared<ValueWatcher>(
      stm.session(), head_path_, "ref " + name_,
      [data = data_, head = head_path_, &session = stm.session()] {
        auto record = decode_head(session.get(head).data, head);
        return data->get(record.newest);
      },
      stm.callbacks());
}

Bytes RefCore::read_latest() {
  auto node = stm_.session().get(head_path_);
  auto record = decode_head(node.data, head_path_);
  auto value = stm_.fetch(*this, record.newest);
  if (!value) {
    throw BackendError("ref " + name_ + ": the newest value (point " + record.newest.id +
                       ") is missing from its store");
  }
  return *value;
}

void RefCore::set_validator(std::function<bool(const Bytes&)> validator) {
  std::lock_guard lock(validator_mutex_);
  validator_ = std::move(validator);
}

void RefCore::validate(const Bytes& value) {
  std::function<bool(const Bytes&)> validator;
  {
    std::lock_guard lock(validator_mutex_);
    validator = validator_;
  }
  if (validator && !validator(value)) {
    throw ValidationError("ref " + name_ + ": the validator rejected the new value");
  }
}

StmContext::StmContext(ZooKeeperSession& session, const std::string& root,
                       std::shared_ptr<CallbackExecutor> callbacks, StmOptions options)
    : session_(session),
      root_(root),
      clock_path_(root + "/stm/clock"),
      heads_root_(root + "/stm/refs"),
      markers_root_(root + "/stm/markers"),
      tags_root_(root + "/stm/tags"),
      sessions_root_(root + "/stm/sessions"),
      callbacks_(std::move(callbacks)),
      options_(options),
      nodes_(std::make_unique<NodeCache>(session)) {
  session_.create_recursive(clock_path_);
  session_.create_recursive(markers_root_);
  session_.create_recursive(sessions_root_);
  announce_session();
}

StmContext::~StmContext() = default;

std::string StmContext::marker_path(const std::string& attempt) const {
  return markers_root_ + "/" + attempt;
}

std::optional<Bytes> StmContext::fetch_value(ReferenceData& data, const Point& point) {
  {
    std::lock_guard lock(cache_mutex_);
    if (auto found = cache_.find(point.id); found != cache_.end()) return found->second;
  }
  Bytes value;
  try {
    value = data.get(point);
  } catch (const MissingPoint&) {
    return std::nullopt;
  }
  remember(point, value);
  return value;
}

void StmContext::remember(const Point& point, const Bytes& value) {
  std::lock_guard lock(cache_mutex_);
  if (cache_.size() >= cached_values) cache_.clear();  // values are immutable: any subset is valid
  cache_.emplace(point.id, value);
}

std::shared_ptr<RefCore> StmContext::attach(const std::string& name, Store& store,
                                            const Bytes& initial) {
  validate_path(name);
  auto ref = std::make_shared<RefCore>(name, std::shared_ptr<ReferenceData>(store.reference_data(name)),
                                       store.max_value_size(), *this);
  if (session_.exists(ref->head_path())) return ref;
  require_fits(initial.size(), store.max_value_size(), "ref " + name);
  // Creating a ref is a commit (rule 1): the head and the clock change in one multi.
  const std::string head = ref->head_path();
  session_.create_recursive(head.substr(0, head.rfind('/')));
  session_.create_recursive(tag_path(name));  // barging tags change only by setData (rule 10)
  announce_session();
  const Point point = new_point();
  ref->data().set(initial, point);
  const std::vector<Operation> create{
      op::Create{head, encode_head(HeadRecord{point, {}, static_cast<std::uint32_t>(options_.min_history)}),
                 CreateMode::persistent},
      op::SetData{clock_path_, {}, -1}};
  bool created = false;
  try {
    created = session_.multi(create).committed;
  } catch (const ConnectionLoss&) {
    // Outcome unknown: the head names our point exactly when our create landed.
    session_.sync(head);
    created = decode_head(session_.get(head).data, head).newest == point;
  }
  if (created) {
    remember(point, initial);
  } else {
    ref->data().erase(point);  // another process created the ref first
    if (!session_.exists(head)) throw BackendError("ref " + name + ": could not create its head");
  }
  return ref;
}

}  // namespace avout::detail
