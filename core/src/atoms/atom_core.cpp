#include "atoms/atom_core.hpp"
#include "base/back_off.hpp"
#include "base/callback_executor.hpp"
#include "base/unique_ids.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <chrono>

namespace avout::detail {

AtomCore::AtomCore(std::string name, std::unique_ptr<AtomState> state, std::size_t max_value_size,
                   ZooKeeperSession& session, std::string watch_path, bool notify,
                   std::shared_ptr<CallbackExecutor> callbacks, std::size_t retry_limit,
                   std::optional<std::chrono::milliseconds> operation_timeout,
                   std::shared_ptr<SessionDeaths> deaths, std::function<void()> announce_writer)
    : name_(std::move(name)),
      state_(std::move(state)),
      max_value_size_(max_value_size),
      session_(session),
      watch_path_(std::move(watch_path)),
      notify_(notify),
      retry_limit_(retry_limit),
      operation_timeout_(operation_timeout),
      announce_writer_(std::move(announce_writer)),
      watcher_(std::make_shared<ValueWatcher>(
          session, watch_path_, "atom " + name_,
          [state = state_, name = name_] {
            auto stored = state->get();
            return stored.exists() ? decode_envelope(stored.value, name).payload : Bytes{};
          },
          std::move(callbacks), notify ? std::move(deaths) : nullptr)) {}

AtomCore::~AtomCore() = default;

namespace {
// A lost compare-and-set is retried by another writer's success; short jittered pauses let
// the winner's neighbours drift apart instead of colliding on the next version too. They stay
// near one ZooKeeper write (0.25 ms growing to 5 ms): with 8 processes the old 1-50 ms pauses
// slept 13 ms per swap, a third of its time, while the server sat idle (docs/performance.md).
constexpr BackOff contention_pauses{std::chrono::microseconds(250), std::chrono::milliseconds(5)};
// About six seconds of outage_pauses.
constexpr std::size_t outage_tries = 20;
}  // namespace

Deadline AtomCore::default_deadline() const {
  return operation_timeout_ ? Deadline::after(*operation_timeout_) : Deadline{};
}

void AtomCore::pause_before_retry(const char* call, std::size_t attempt, const Deadline& deadline) {
  if (!deadline.expired() && back_off(attempt - 1, deadline, contention_pauses)) return;
  throw Timeout("atom " + name_ + ": " + call + ": " + deadline.reason() + " after " +
                std::to_string(attempt) + " attempts");
}

AtomSnapshot AtomCore::read(const Deadline& deadline) {
  const ReplyDeadline bound(deadline);
  try {
    return read();
  } catch (const Timeout&) {
    if (!deadline.expired()) throw;
    throw Timeout("atom " + name_ + ": " + deadline.reason() +
                  " while waiting for ZooKeeper; nothing was written");
  }
}

AtomSnapshot AtomCore::read() {
  AtomSnapshot snapshot;
  snapshot.stored = state_->get();
  if (snapshot.stored.exists()) snapshot.envelope = decode_envelope(snapshot.stored.value, name_);
  return snapshot;
}

bool AtomCore::write(const AtomSnapshot& expected, Bytes payload, const Deadline& deadline) {
  const ReplyDeadline bound(deadline);
  const std::uint64_t writer = unique_writer_id();
  AtomEnvelope next{expected.envelope.sequence + 1, expected.envelope.recent_writers,
                    std::move(payload)};
  next.recent_writers.push_back(writer);
  if (next.recent_writers.size() > kept_writers) {
    next.recent_writers.erase(next.recent_writers.begin());
  }
  const Bytes bytes = encode_envelope(next);
  require_fits(bytes.size(), max_value_size_, "atom " + name_);
  // Before the store write: should this process die before its notice, the end of an
  // announced session is what tells the watchers (SessionDeaths).
  if (notify_ && announce_writer_) announce_writer_();
  bool written = false;
  try {
    written = state_->compare_and_set(expected.stored, bytes);
  } catch (const ConnectionLoss& error) {
    written = resolve_lost_reply(expected, bytes, writer, error.what());
  } catch (const BackendError& error) {
    written = resolve_lost_reply(expected, bytes, writer, error.what());
  } catch (const Timeout& error) {  // a store's statement timeout: the write may have run
    written = resolve_lost_reply(expected, bytes, writer, error.what());
  }
  if (written && notify_) announce();
  return written;
}

// Watchers in other processes learn of a value held outside ZooKeeper only through this
// touch: it is awaited and repeated until it lands (a lost one would leave them on an old
// value), also across a reconnect or a renewed session. The value is stored already, so a
// notice that cannot be sent is CommittedWithError: the caller must not write it again.
void AtomCore::announce() {
  std::string failure;
  for (std::size_t attempt = 0; attempt < 2 * outage_tries; ++attempt) {
    try {
      session_.set(watch_path_, {}, -1);
      return;
    } catch (const ConnectionLoss& error) {
      failure = error.what();
    } catch (const SessionExpired& error) {
      failure = error.what();
    } catch (const Error& error) {
      // The notice node is gone or refused, or the call's deadline passed: retrying will
      // not help.
      failure = error.what();
      break;
    }
    if (!back_off(attempt, ReplyDeadline::current(), outage_pauses)) break;
  }
  throw CommittedWithError("atom " + name_ +
                           ": the new value is stored (the swap happened), "
                           "but its change notice on " +
                           watch_path_ + " could not be sent: " + failure);
}

// A read whose view is at least as new as any write this process sent before it: for a
// ZooKeeper-held value a sync is pipelined in front of the read, so a follower that has not
// yet applied the lost write cannot answer for it.
AtomSnapshot AtomCore::read_after_sync() {
  if (notify_) return read();
  auto synced = session_.sync_async(watch_path_);
  AtomSnapshot snapshot = read();
  session_.wait(synced);
  return snapshot;
}

// The write of `sent` (carrying `writer`) may or may not have landed, and it may even still
// be on its way to the store (a command that timed out can run later). It could only ever
// land on the version it expected, so: our id in the envelope means it landed; the version
// moved on without our id (and the envelope lists every write since) means it never will;
// the version unchanged means it has not landed yet, and the same write is sent again. Both
// copies expect that one version, so at most one lands, and the loop reads which did.
bool AtomCore::resolve_lost_reply(const AtomSnapshot& expected, const Bytes& sent,
                                  std::uint64_t writer, std::string failure) {
  for (std::size_t attempt = 0; attempt < outage_tries; ++attempt) {
    if (ReplyDeadline::expired()) {
      throw OutcomeUnknown("atom " + name_ + ": the call's " + ReplyDeadline::current().reason() +
                           " with a write in flight, which may have landed: " + failure);
    }
    try {
      const AtomSnapshot now = read_after_sync();
      const auto& writers = now.envelope.recent_writers;
      if (now.stored.exists() &&
          std::find(writers.begin(), writers.end(), writer) != writers.end()) {
        return true;
      }
      if (now.stored.version == expected.stored.version) {
        if (state_->compare_and_set(expected.stored, sent)) return true;
        continue;  // another write came first, or ours did: read which
      }
      if (now.stored.exists() &&
          now.envelope.sequence - expected.envelope.sequence <= writers.size()) {
        return false;
      }
      throw OutcomeUnknown("atom " + name_ +
                           ": a write's reply was lost and too many writes "
                           "followed it (or the value was deleted) to tell whether it landed");
    } catch (const OutcomeUnknown&) {
      throw;
    } catch (const ConnectionLoss& error) {
      failure = error.what();
    } catch (const BackendError& error) {
      failure = error.what();
    } catch (const Timeout& error) {
      failure = error.what();
    }
    (void)back_off(attempt, ReplyDeadline::current(), outage_pauses);
  }
  throw OutcomeUnknown("atom " + name_ +
                       ": a write's reply was lost and whether it landed "
                       "could not be found out (it may have): " +
                       failure);
}

void AtomCore::add_watch(const std::string& key, BytesWatch watch) {
  watcher_->add(key, std::move(watch));
}

void AtomCore::remove_watch(const std::string& key) { watcher_->remove(key); }

}  // namespace avout::detail
