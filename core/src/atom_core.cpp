#include <avout/detail/atom_core.hpp>
#include <avout/errors.hpp>

#include <unistd.h>

#include <algorithm>
#include <optional>
#include <cstdio>
#include <random>
#include <thread>

namespace avout::detail {

std::uint64_t unique_writer_id() {
  // Reseeded in a forked child: a generator state copied by fork() would make the child
  // repeat its parent's (and its siblings') ids, and a lost reply would then be "resolved"
  // by another process's write.
  thread_local pid_t seeded_for = 0;
  thread_local std::mt19937_64 generator;
  if (seeded_for != getpid()) {
    std::random_device entropy;
    std::seed_seq seed{entropy(), entropy(), entropy(), entropy(),
                       static_cast<unsigned>(getpid())};
    generator.seed(seed);
    seeded_for = getpid();
  }
  std::uint64_t id = 0;
  while (id == 0) id = generator();
  return id;
}

AtomCore::AtomCore(std::string name, std::unique_ptr<AtomState> state, std::size_t max_value_size,
                   ZooKeeperSession& session, std::string watch_path, bool notify,
                   std::shared_ptr<CallbackExecutor> callbacks, std::size_t retry_limit)
    : name_(std::move(name)),
      state_(std::move(state)),
      max_value_size_(max_value_size),
      session_(session),
      watch_path_(std::move(watch_path)),
      notify_(notify),
      retry_limit_(retry_limit),
      watcher_(std::make_shared<ValueWatcher>(
          session, watch_path_, "atom " + name_,
          [state = state_, name = name_] {
            auto stored = state->get();
            return stored.exists() ? decode_envelope(stored.value, name).payload : Bytes{};
          },
          std::move(callbacks))) {}

AtomCore::~AtomCore() = default;

AtomSnapshot AtomCore::read() {
  AtomSnapshot snapshot;
  snapshot.stored = state_->get();
  if (snapshot.stored.exists()) snapshot.envelope = decode_envelope(snapshot.stored.value, name_);
  return snapshot;
}

bool AtomCore::write(const AtomSnapshot& expected, Bytes payload) {
  const std::uint64_t writer = unique_writer_id();
  AtomEnvelope next{expected.envelope.sequence + 1, expected.envelope.recent_writers,
                    std::move(payload)};
  next.recent_writers.push_back(writer);
  if (next.recent_writers.size() > kept_writers) {
    next.recent_writers.erase(next.recent_writers.begin());
  }
  Bytes bytes = encode_envelope(next);
  require_fits(bytes.size(), max_value_size_, "atom " + name_);
  bool written = false;
  try {
    written = state_->compare_and_set(expected.stored, std::move(bytes));
  } catch (const ConnectionLoss&) {
    written = resolve_lost_reply(expected, writer);
  } catch (const BackendError&) {
    written = resolve_lost_reply(expected, writer);
  }
  if (written && notify_) {
    // Fire and forget: watchers re-read the store, and a lost touch only delays them
    // until the next write.
    (void)session_.set_async(watch_path_, {}, -1);
  }
  return written;
}

// The write may or may not have landed. Read back (retrying while the store is unreachable):
// our id in the envelope means it did; an envelope whose writer list covers every write
// since `expected` without our id means it did not; anything else stays unknown.
bool AtomCore::resolve_lost_reply(const AtomSnapshot& expected, std::uint64_t writer) {
  std::exception_ptr last_error = std::current_exception();
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::optional<AtomSnapshot> read_back;
    try {
      read_back = read();
    } catch (const ConnectionLoss&) {
      last_error = std::current_exception();
    } catch (const BackendError&) {
      last_error = std::current_exception();
    }
    if (read_back) {
      const AtomSnapshot& now = *read_back;
      if (!now.stored.exists()) return false;  // a create that did not land
      const auto& writers = now.envelope.recent_writers;
      if (std::find(writers.begin(), writers.end(), writer) != writers.end()) return true;
      if (now.envelope.sequence - expected.envelope.sequence <= writers.size()) return false;
      throw BackendError("atom " + name_ + ": a write's reply was lost and too many writes "
                         "followed it to tell whether it landed");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50 * (attempt + 1)));
  }
  std::rethrow_exception(last_error);
}

void AtomCore::add_watch(const std::string& key, BytesWatch watch) {
  watcher_->add(key, std::move(watch));
}

void AtomCore::remove_watch(const std::string& key) { watcher_->remove(key); }

}  // namespace avout::detail
