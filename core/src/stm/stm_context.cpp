#include "stm/stm_context.hpp"
#include "runtime/pending_markers.hpp"
#include "runtime/store_records.hpp"
#include "stm/background_erasure.hpp"
#include "stm/ref_core.hpp"
#include "stm/value_batches.hpp"

#include <avout/codec.hpp>
#include <avout/errors.hpp>

namespace avout::detail {

TransactionAge StmContext::new_age(std::int64_t read_point) {
  return TransactionAge{read_point, runtime_.session().session_id(), ++ages_};
}

namespace {
// A commit may replace and trim the value between our reads of the head and of the value:
// then the head (read again after a sync) has moved on and names a newer one. Only a value
// the head still names is missing for real (rule 8).
Bytes newest_value(ZooKeeperSession& session, const std::string& head, const std::string& name,
                   const std::function<std::optional<Bytes>(const Point&)>& fetch) {
  constexpr int rereads = 10000;
  auto record = decode_head(session.get(head).data, head);
  for (int attempt = 0; attempt < rereads; ++attempt) {
    if (auto value = fetch(record.newest)) return std::move(*value);
    session.sync(head);
    auto now = decode_head(session.get(head).data, head);
    if (now.newest == record.newest) {
      throw BackendError("ref " + name + ": the newest value (point " + record.newest.id +
                         ") is missing from its store");
    }
    record = std::move(now);
  }
  throw RetryLimitExceeded("ref " + name + ": its newest value kept being replaced while read");
}
}  // namespace

RefCore::RefCore(std::string name, std::shared_ptr<ReferenceData> data, Store& store,
                 std::size_t max_value_size, StmContext& stm)
    : name_(std::move(name)),
      head_path_(stm.runtime().layout().ref_head(name_)),
      data_(std::move(data)),
      store_(store),
      max_value_size_(max_value_size),
      stm_(stm) {
  // The watcher's reads must not reach back into this object (it may die first).
  watcher_ = std::make_shared<ValueWatcher>(
      stm.runtime().session(), head_path_, "ref " + name_,
      [data = data_, head = head_path_, name = name_, &session = stm.runtime().session()] {
        return newest_value(session, head, name, [&](const Point& point) -> std::optional<Bytes> {
          try {
            return data->get(point);
          } catch (const MissingPoint&) {
            return std::nullopt;
          }
        });
      },
      stm.runtime().callbacks());
}

Bytes RefCore::read_latest() {
  return newest_value(stm_.runtime().session(), head_path_, name_, [&](const Point& point) {
    return stm_.runtime().fetch_value(*data_, point);
  });
}

void RefCore::require_kind(const Bytes& sample) {
  codec::require_same_kind(read_latest(), sample, "ref", name_);
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

StmContext::StmContext(Runtime& runtime)
    : runtime_(runtime),
      batches_(std::make_unique<StoreBatches>()),
      erasures_(std::make_unique<BackgroundErasure>()) {}

StmContext::~StmContext() = default;

std::shared_ptr<RefCore> StmContext::attach(const std::string& name, Store& store,
                                            const Bytes& initial) {
  validate_path(name);
  claim_store(runtime_.session(), runtime_.layout(), "ref", name, store.identity(),
              runtime_.options().retry_limit);
  std::shared_ptr<RefCore> ref;
  {
    std::lock_guard lock(refs_mutex_);
    auto& known = refs_[name];
    ref = known.core.lock();
    if (ref && known.store != store.description()) {
      throw Error("ref " + name + " is already attached with another store (" + known.store +
                  ") in this client");
    }
    if (!ref) {
      ref = std::make_shared<RefCore>(name,
                                      std::shared_ptr<ReferenceData>(store.reference_data(
                                          runtime_.layout().value_key("ref", name))),
                                      store, store.max_value_size(), *this);
      known = KnownRef{ref, store.description()};
    }
  }
  create_head(*ref, store, initial);
  return ref;
}

void StmContext::create_head(RefCore& ref, Store& store, const Bytes& initial) {
  const std::string& head = ref.head_path();
  for (std::size_t attempt = 0; attempt < runtime_.options().retry_limit; ++attempt) {
    // A head always has data; an empty node is only the parent of deeper names (rule 14).
    const auto stat = runtime_.session().exists(head);
    if (stat && stat->data_length > 0) return;
    require_fits(initial.size(), store.max_value_size(), "ref " + ref.name());
    runtime_.session().create_recursive(head.substr(0, head.rfind('/')));
    runtime_.session().create_recursive(
        runtime_.layout().tag(ref.name()));  // tags change only by setData (rule 10)
    const std::uint64_t generation = runtime_.session().generation();  // the point's (rule 2)
    runtime_.announce_session();
    const Point point = runtime_.new_point();
    ref.data().set(initial, point);
    // Creating a ref is a commit (rule 1) with a marker, so a lost reply is resolved exactly
    // (rule 6) even when other commits have moved the head on since.
    const auto keep = static_cast<std::uint32_t>(runtime_.options().min_history);
    const Bytes record = encode_head(HeadRecord{point, {}, keep});
    const std::string marker = runtime_.layout().marker(runtime_.new_point().id);
    Operation write_head = op::Create{head, record, CreateMode::persistent};
    if (stat) write_head = op::SetData{head, record, stat->version};
    std::optional<bool> landed;
    try {
      landed = runtime_.markers().commit(
          {op::Create{marker, {}, CreateMode::persistent}, write_head,
           op::SetData{runtime_.layout().stm_clock(), {}, -1}},
          marker, nullptr, 0,
          [&] {
            const Bytes now = runtime_.session().get(head).data;  // a tombstone names nothing
            return !is_head_tombstone(now) && names(decode_head(now, head), point);
          },
          generation);
    } catch (const SessionExpired&) {
      // Renewed since the point was written: the multi did not go out; a new point will.
      ref.data().erase(point);
      continue;
    }
    if (!landed) {
      // The point may be referenced: it stays for gc to judge.
      throw OutcomeUnknown("ref " + ref.name() + ": creating its head " + head +
                           ": outcome unknown (ZooKeeper unreachable); marker " + marker);
    }
    if (*landed) {
      runtime_.remember(point, initial);
      return;
    }
    ref.data().erase(point);  // another process wrote the head first: look again
  }
  throw RetryLimitExceeded("ref " + ref.name() + ": could not create its head " + head);
}

bool StmContext::predicts_read_only() const {
  std::lock_guard lock(threads_mutex_);
  const auto found = read_only_last_.find(std::this_thread::get_id());
  return found != read_only_last_.end() && found->second;
}

void StmContext::note_dosync(bool wrote) {
  std::lock_guard lock(threads_mutex_);
  // Only read-only ones are kept: a thread that writes (the usual case) leaves no entry.
  if (wrote)
    read_only_last_.erase(std::this_thread::get_id());
  else
    read_only_last_[std::this_thread::get_id()] = true;
}

}  // namespace avout::detail
