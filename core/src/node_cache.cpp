#include "node_cache.hpp"

#include <avout/errors.hpp>

#include <mutex>
#include <unordered_map>
#include <thread>
#include <vector>

namespace avout::detail {

namespace {
constexpr std::size_t cached_nodes = 65536;
}

struct NodeCache::State {
  struct Slot {
    std::optional<NodeData> node;         // valid while `armed` and no event came
    std::shared_future<NodeData> pending; // a read in flight, if any
    std::uint64_t pending_ticket = 0;
    bool armed = false;                   // a watch of ours is registered on the path
    std::uint64_t epoch = 0;              // bumped by every event on the path
    std::optional<std::int64_t> unwatched_at;  // `node` was installed unwatched at this zxid
  };
  std::mutex mutex;
  std::unordered_map<std::string, Slot> slots;
  // Per thread, the paths of its last commit's unwatched nodes (they may have gone since).
  std::unordered_map<std::thread::id, std::vector<std::string>> kept_by_thread;
  std::uint64_t generation = 0;  // bumped by every session event: all slots are suspect

  std::uint64_t ticket(const Slot& slot) const { return (generation << 32) ^ slot.epoch; }

  void forget(Slot& slot) {
    slot.node.reset();
    slot.pending = {};
    slot.armed = false;
    slot.unwatched_at.reset();
    ++slot.epoch;
  }
};

NodeCache::NodeCache(ZooKeeperSession& session)
    : session_(session), state_(std::make_shared<State>()) {
  listener_ = session_.add_listener([weak = std::weak_ptr<State>(state_)](SessionState) {
    auto state = weak.lock();
    if (!state) return;
    std::lock_guard lock(state->mutex);
    ++state->generation;
    for (auto& [path, slot] : state->slots) state->forget(slot);
    state->kept_by_thread.clear();
  });
}

NodeCache::~NodeCache() { session_.remove_listener(listener_); }

NodeCache::Lookup NodeCache::begin(const std::string& path) {
  Lookup lookup{path, std::nullopt, {}, 0, std::nullopt};
  std::lock_guard lock(state_->mutex);
  if (state_->slots.size() >= cached_nodes && !state_->slots.contains(path)) {
    // Dropping entries is always safe; their watches only bump epochs nobody reads.
    for (auto& [key, slot] : state_->slots) state_->forget(slot);
    ++state_->generation;
    state_->slots.clear();
    state_->kept_by_thread.clear();
  }
  auto& slot = state_->slots[path];
  if (slot.node) {
    lookup.known = slot.node;
    lookup.ticket = state_->ticket(slot);
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
    watch = [weak = std::weak_ptr<State>(state_), path](const WatchEvent&) {
      auto state = weak.lock();
      if (!state) return;
      std::lock_guard lock(state->mutex);
      if (auto found = state->slots.find(path); found != state->slots.end()) {
        state->forget(found->second);
      }
    };
    slot.armed = true;
  }
  // Sent under the lock, so the watch event of this read cannot overtake the bookkeeping.
  slot.pending = session_.get_async(path, std::move(watch)).share();
  slot.pending_ticket = state_->ticket(slot);
  lookup.reply = slot.pending;
  lookup.ticket = slot.pending_ticket;
  return lookup;
}

NodeData NodeCache::finish(Lookup& lookup, std::optional<std::int64_t> read_point) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (lookup.known) {
      // Known when the lookup began; still valid only if no event came since, and when
      // kept unwatched, only at the read point of the commit that wrote it.
      std::lock_guard lock(state_->mutex);
      auto& slot = state_->slots[lookup.path];
      const bool current = state_->ticket(slot) == lookup.ticket && slot.node;
      if (current && (!lookup.unwatched_at || lookup.unwatched_at == read_point)) {
        return *lookup.known;
      }
      if (current) state_->forget(slot);  // unwatched and not provably current: read it again
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
      auto& slot = state_->slots[lookup.path];
      if (state_->ticket(slot) == lookup.ticket) {
        // No event since the read was sent: it is the node as of any later read point.
        if (slot.armed) {
          slot.node = node;
          slot.unwatched_at.reset();
        }
        slot.pending = {};
        return node;
      }
    }
    // The node changed (or the session stirred) since the lookup began: look again.
    lookup = begin(lookup.path);
  }
  return session_.get(lookup.path);  // a fresh, unwatched read is always current enough
}

void NodeCache::keep_unwatched(std::vector<std::pair<std::string, NodeData>> nodes, std::int64_t zxid) {
  std::lock_guard lock(state_->mutex);
  auto& kept = state_->kept_by_thread[std::this_thread::get_id()];
  kept.clear();
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
    kept.push_back(path);
  }
}

void NodeCache::rearm_stale(std::int64_t read_point) {
  std::vector<std::string> stale;
  {
    std::lock_guard lock(state_->mutex);
    auto kept = state_->kept_by_thread.find(std::this_thread::get_id());
    if (kept == state_->kept_by_thread.end()) return;
    for (const auto& path : kept->second) {
      auto found = state_->slots.find(path);
      if (found == state_->slots.end() || !found->second.unwatched_at) continue;
      if (*found->second.unwatched_at == read_point) continue;
      state_->forget(found->second);
      stale.push_back(path);
    }
    // Kept while still current: the next transaction checks them against its own read point.
    if (!stale.empty()) state_->kept_by_thread.erase(kept);
  }
  for (const auto& path : stale) (void)begin(path);
}

}  // namespace avout::detail
