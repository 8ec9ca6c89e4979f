#include "runtime/node_cache.hpp"
#include "base/callback_executor.hpp"
#include "runtime/prefetch_tally.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace avout::detail {

namespace {
constexpr std::size_t cached_nodes = 65536;
}

struct NodeCache::State : std::enable_shared_from_this<State> {
  State(ZooKeeperSession& zookeeper, std::shared_ptr<CallbackExecutor> executor)
      : session(zookeeper), callbacks(std::move(executor)) {}

  // Used under `mutex` while not `closed`: the cache's destructor closes it, and the session
  // outlives the cache.
  ZooKeeperSession& session;
  std::shared_ptr<CallbackExecutor> callbacks;  // runs V6's reads ahead; null: none
  bool closed = false;
  struct Slot {
    std::optional<NodeData> node;          // valid while `armed` and no event came
    std::shared_future<NodeData> pending;  // a read in flight, if any
    std::uint64_t pending_ticket = 0;
    bool armed = false;                        // a watch of ours is registered on the path
    std::uint64_t epoch = 0;  // the serial: bumped when the node held is replaced or dropped
    std::optional<std::int64_t> unwatched_at;  // `node` was installed unwatched at this zxid
    bool prefetched = false;  // read ahead by prefetch() and not yet found by a lookup
    int readers = 0;  // live lookups finished here by finish_newest (their `reading` tokens)
  };
  std::mutex mutex;
  std::unordered_map<std::string, Slot> slots;
  // Notified whenever a slot's serial moves (forget, keep_unwatched), under `mutex`: wakes
  // wait_moved. ZooKeeper's callbacks (watch, session) only signal it, never wait.
  std::condition_variable_any slot_moved;
  int waiters = 0;  // threads in wait_moved: only they need slot_moved's notification
  void notify_moved() {
    if (waiters > 0) slot_moved.notify_all();
  }
  // Per thread: its last commit's unwatched nodes, and whether reading them ahead pays.
  struct Kept {
    std::vector<std::string> paths;  // may have gone or been read again since
    bool used = false;               // a lookup of this thread asked for one of them since
    bool reused = true;    // the thread's previous transaction did ask for its predecessor's
    bool rearmed = false;  // read again already
  };
  std::unordered_map<std::thread::id, Kept> kept_by_thread;
  // Our own run of commits: every commit with a zxid in (run_start, run_end] is one of this
  // client's and its heads are kept here. It goes on while each kept commit's clock version
  // is one more than the last one's: no other commit landed in between.
  struct Run {
    std::int64_t start = 0;
    std::int64_t end = 0;
    std::int32_t clock_version = 0;
  };
  std::optional<Run> run;

  void note_use(const std::string& path) {
    auto kept = kept_by_thread.find(std::this_thread::get_id());
    if (kept == kept_by_thread.end() || kept->second.used) return;
    const auto& paths = kept->second.paths;
    kept->second.used = std::find(paths.begin(), paths.end(), path) != paths.end();
  }

  // An unwatched node kept at `kept_at` is the node as of `read_point` when only our own
  // commits, each of which kept what it wrote, landed in between.
  bool current(std::int64_t kept_at, std::optional<std::int64_t> read_point) const {
    return run && read_point && run->start <= kept_at && kept_at <= *read_point &&
           *read_point <= run->end;
  }
  std::uint64_t generation = 0;  // bumped by every session event: all slots are suspect

  std::uint64_t ticket(const Slot& slot) const { return (generation << 32) ^ slot.epoch; }

  // Whether the slot `lookup` finished at holds something else now (its serial moved, the
  // session stirred, or the cache dropped it for room).
  bool moved(const Lookup& lookup) const {
    const auto found = slots.find(lookup.path);
    return found == slots.end() || ticket(found->second) != lookup.ticket;
  }

  void forget(Slot& slot) {
    if (std::exchange(slot.prefetched, false)) count_prefetch_wasted();
    slot.node.reset();
    slot.pending = {};
    slot.armed = false;
    slot.unwatched_at.reset();
    ++slot.epoch;
    notify_moved();
  }

  // Counts a live reader of `slot` until every copy of the token is gone; then, under
  // `mutex`, gives it back. The slot stays in `slots` while counted (see begin_locked).
  std::shared_ptr<void> take_interest(Slot& slot) {
    ++slot.readers;
    return std::shared_ptr<Slot>(&slot, [weak = weak_from_this()](Slot* held) {
      auto state = weak.lock();
      if (!state) return;
      std::lock_guard lock(state->mutex);
      --held->readers;
    });
  }

  // V6, on the ZooKeeper thread, which only posts: the callback thread reads `path` ahead,
  // unless the cache has closed or every attempt that read it has ended by then.
  void post_prefetch(const std::string& path) {
    if (closed || !callbacks) return;
    callbacks->post([weak = weak_from_this(), path] {
      auto state = weak.lock();
      if (!state) return;
      std::lock_guard lock(state->mutex);
      const auto found = state->slots.find(path);
      if (state->closed || found == state->slots.end() || found->second.readers == 0) return;
      state->prefetch_locked(path);
    });
  }

  // Whether `path`'s slot holds a node newer than `mzxid` that this client's commit kept in
  // the current run: the newest node as far as V3 can tell, so reading it again buys nothing.
  bool holds_newer_kept(const std::string& path, std::int64_t mzxid) const {
    const auto found = slots.find(path);
    if (found == slots.end()) return false;
    const Slot& slot = found->second;
    return slot.node && slot.unwatched_at && slot.node->stat.mzxid > mzxid && run &&
           current(*slot.unwatched_at, run->end);
  }

  // NodeCache's begin(), begin_watched() and prefetch(), with `mutex` held.
  Lookup begin_locked(const std::string& path);
  Lookup begin_watched_locked(const std::string& path);
  void prefetch_locked(const std::string& path);
};

NodeCache::NodeCache(ZooKeeperSession& session, std::shared_ptr<CallbackExecutor> callbacks)
    : session_(session), state_(std::make_shared<State>(session, std::move(callbacks))) {
  listener_ = session_.add_listener([weak = std::weak_ptr<State>(state_)](SessionState) {
    auto state = weak.lock();
    if (!state) return;
    std::lock_guard lock(state->mutex);
    ++state->generation;
    for (auto& [path, slot] : state->slots) state->forget(slot);
    state->kept_by_thread.clear();
    state->run.reset();
  });
}

NodeCache::~NodeCache() {
  session_.remove_listener(listener_);
  std::shared_ptr<CallbackExecutor> callbacks;  // let go after the lock: it may be the last
  std::lock_guard lock(state_->mutex);
  state_->closed = true;  // a read ahead posted and not run yet does nothing now
  callbacks = std::move(state_->callbacks);
}

NodeCache::Lookup NodeCache::begin(const std::string& path) {
  std::lock_guard lock(state_->mutex);
  return state_->begin_locked(path);
}

NodeCache::Lookup NodeCache::State::begin_locked(const std::string& path) {
  Lookup lookup;
  lookup.path = path;
  if (slots.size() >= cached_nodes && !slots.contains(path)) {
    // Dropping entries is always safe; their watches only bump epochs nobody reads.
    for (auto& [key, slot] : slots) forget(slot);
    ++generation;
    // A slot with live readers stays (their tokens point at it), emptied like the rest.
    std::erase_if(slots, [](const auto& entry) { return entry.second.readers == 0; });
    kept_by_thread.clear();
    run.reset();
  }
  auto& slot = slots[path];
  if (std::exchange(slot.prefetched, false)) count_prefetch_used();
  if (slot.node) {
    lookup.known = slot.node;
    lookup.ticket = ticket(slot);
    lookup.unwatched_at = slot.unwatched_at;
    return lookup;
  }
  if (slot.pending.valid()) {
    lookup.reply = slot.pending;
    lookup.ticket = slot.pending_ticket;
    return lookup;
  }
  WatchCallback watch;
  if (!slot.armed) {
    watch = [weak = weak_from_this(), path](const WatchEvent& event) {
      auto state = weak.lock();
      if (!state) return;
      std::lock_guard lock(state->mutex);
      auto found = state->slots.find(path);
      if (found == state->slots.end()) return;
      state->forget(found->second);
      // V6: a live attempt read this node; its retry will want the new one.
      if (found->second.readers > 0 && event.type == WatchEventType::changed)
        state->post_prefetch(path);
    };
    slot.armed = true;
  }
  // Sent under the lock, so the watch event of this read cannot overtake the bookkeeping.
  slot.pending = session.get_async(path, std::move(watch)).share();
  slot.pending_ticket = ticket(slot);
  lookup.reply = slot.pending;
  lookup.ticket = slot.pending_ticket;
  return lookup;
}

NodeData NodeCache::finish(Lookup& lookup, std::optional<std::int64_t> read_point) {
  return finish_at(lookup, read_point, false);
}

NodeData NodeCache::finish_newest(Lookup& lookup) { return finish_at(lookup, std::nullopt, true); }

NodeData NodeCache::finish_at(Lookup& lookup, std::optional<std::int64_t> read_point,
                              bool current_run) {
  lookup.reading.reset();  // not under the lock: giving it back takes the lock
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (lookup.known) {
      // Known when the lookup began; still valid only if no event came since, and when
      // kept unwatched, only at the read point of the commit that wrote it (or, for the
      // newest node, while the run of our commits it was kept in goes on).
      std::lock_guard lock(state_->mutex);
      state_->note_use(lookup.path);
      if (current_run && state_->run) read_point = state_->run->end;
      auto& slot = state_->slots[lookup.path];
      const bool unchanged = state_->ticket(slot) == lookup.ticket && slot.node;
      if (unchanged &&
          (!lookup.unwatched_at || state_->current(*lookup.unwatched_at, read_point))) {
        lookup.watched = !lookup.unwatched_at;
        if (current_run) lookup.reading = state_->take_interest(slot);
        return *lookup.known;
      }
      if (unchanged) state_->forget(slot);  // unwatched and not provably current: read it again
    } else {
      NodeData node;
      try {
        node = session_.wait(lookup.reply);
      } catch (...) {
        std::lock_guard lock(state_->mutex);
        auto& slot = state_->slots[lookup.path];
        if (slot.pending_ticket == lookup.ticket) state_->forget(slot);
        throw;
      }
      std::lock_guard lock(state_->mutex);
      state_->note_use(lookup.path);
      auto& slot = state_->slots[lookup.path];
      if (state_->ticket(slot) == lookup.ticket) {
        // No event since the read was sent: it is the node as of any later read point.
        if (slot.armed) {
          slot.node = node;
          slot.unwatched_at.reset();
        }
        slot.pending = {};
        lookup.watched = slot.armed;
        if (current_run) lookup.reading = state_->take_interest(slot);
        return node;
      }
    }
    // The node changed (or the session stirred) since the lookup began: look again.
    lookup = begin(lookup.path);
  }
  lookup.watched = false;
  lookup.unwatched_at.reset();
  return session_.get(lookup.path);  // a fresh, unwatched read is always current enough
}

bool NodeCache::changed_since(const Lookup& lookup) const {
  if (!lookup.watched && !lookup.kept()) return false;
  std::lock_guard lock(state_->mutex);
  return state_->moved(lookup);
}

bool NodeCache::wait_moved(const Lookup& lookup, const Deadline& deadline) const {
  std::unique_lock lock(state_->mutex);
  std::stop_token stop = deadline.stop_token();
  ++state_->waiters;
  const bool moved = state_->slot_moved.wait_until(lock, stop, deadline.time_or_far(),
                                                   [&] { return state_->moved(lookup); });
  --state_->waiters;
  return moved;
}

NodeCache::View NodeCache::judge(
    const std::vector<std::pair<const Lookup*, std::int64_t>>& reads) const {
  std::lock_guard lock(state_->mutex);
  bool kept_stale = false;
  std::int64_t newest = 0;
  for (const auto& [lookup, mzxid] : reads) {
    if (!lookup->watched && !lookup->kept()) return View::changed;  // cannot be told
    if (state_->moved(*lookup)) return View::changed;
    newest = std::max(newest, mzxid);
    // A kept node is the node only up to the end of the run it was kept in.
    if (lookup->kept() && !state_->current(*lookup->unwatched_at, state_->run ? state_->run->end
                                                                               : std::int64_t{-1}))
      kept_stale = true;
  }
  const bool any_kept = std::any_of(reads.begin(), reads.end(),
                                    [](const auto& read) { return read.first->kept(); });
  // Watched nodes unchanged are the nodes now; kept ones are as of the run's end: one view
  // when every node read is no newer than that end (then it was the node there too).
  if (any_kept && (kept_stale || !state_->run || newest > state_->run->end))
    return View::kept_stale;
  return View::consistent;
}

NodeCache::Lookup NodeCache::begin_watched(const std::string& path) {
  std::lock_guard lock(state_->mutex);
  return state_->begin_watched_locked(path);
}

NodeCache::Lookup NodeCache::State::begin_watched_locked(const std::string& path) {
  auto found = slots.find(path);
  if (found != slots.end() && found->second.unwatched_at) forget(found->second);
  return begin_locked(path);
}

void NodeCache::prefetch(const std::string& path, std::optional<std::int64_t> read_mzxid) {
  std::lock_guard lock(state_->mutex);
  if (read_mzxid && state_->holds_newer_kept(path, *read_mzxid)) return;
  state_->prefetch_locked(path);
}

void NodeCache::State::prefetch_locked(const std::string& path) {
  const auto found = slots.find(path);
  if (found != slots.end() && found->second.prefetched) return;  // read ahead already
  (void)begin_watched_locked(path);
  // Under one lock no event can have emptied the slot: it holds the node or the read.
  slots[path].prefetched = true;
  count_prefetch_made();
}

void NodeCache::keep_unwatched(std::vector<std::pair<std::string, NodeData>> nodes,
                               std::int64_t zxid, std::int32_t clock_version) {
  std::lock_guard lock(state_->mutex);
  auto& run = state_->run;
  // 64-bit: the clock's version is ZooKeeper's int32, which wraps after 2^31 commits.
  if (run && run->end < zxid && std::int64_t{run->clock_version} + 1 == clock_version) {
    run->end = zxid;
  } else {
    run = State::Run{zxid, zxid, clock_version};
  }
  run->clock_version = clock_version;
  auto& kept = state_->kept_by_thread[std::this_thread::get_id()];
  kept.reused = kept.used;
  kept.used = false;
  kept.rearmed = false;
  kept.paths.clear();
  for (auto& [path, node] : nodes) {
    auto found = state_->slots.find(path);
    if (found == state_->slots.end()) {
      if (state_->slots.size() >= cached_nodes) continue;  // begin() makes room; this can wait
      found = state_->slots.emplace(path, State::Slot{}).first;
    }
    auto& slot = found->second;
    // An armed slot was read (or is being read) after the event our commit's write fired,
    // which came before the commit's reply: what it holds is as new as our write or newer.
    if (slot.armed) continue;
    slot.node = std::move(node);
    slot.unwatched_at = zxid;
    ++slot.epoch;
    kept.paths.push_back(path);
  }
  state_->notify_moved();
}

std::optional<NodeCache::OwnCommit> NodeCache::last_own_commit() const {
  std::lock_guard lock(state_->mutex);
  if (!state_->run) return std::nullopt;
  return OwnCommit{state_->run->end, state_->run->clock_version};
}

void NodeCache::rearm_stale(std::int64_t read_point) {
  std::lock_guard lock(state_->mutex);
  auto kept = state_->kept_by_thread.find(std::this_thread::get_id());
  // Only for a thread whose transactions come back to what they wrote (a loop over the same
  // refs); one that moves on (transfers between random accounts) would read in vain.
  if (kept == state_->kept_by_thread.end() || !kept->second.reused || kept->second.rearmed)
    return;
  kept->second.rearmed = true;
  // Copied: begin_locked may empty the cache for room, and this thread's entry with it.
  const std::vector<std::string> paths = kept->second.paths;
  for (const auto& path : paths) {
    auto found = state_->slots.find(path);
    if (found == state_->slots.end() || !found->second.unwatched_at) continue;
    if (state_->current(*found->second.unwatched_at, read_point)) continue;
    state_->forget(found->second);
    (void)state_->begin_locked(path);
  }
}

}  // namespace avout::detail
