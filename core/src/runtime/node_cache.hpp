#pragma once
// Ref heads, barging tags and claimants' liveness nodes cached per client and kept valid by
// one-shot watches (docs/transactions.md rule 12), so a transaction reads the nodes it needs
// without a round trip of their own.
//
// Why it is safe: a watch event reaches this client before the reply of any request sent
// after the watched read, and the event callback runs on the ZooKeeper thread before that
// reply's future is ready. So once a transaction holds its read point (the clock's reply), a
// node that changed at or before the read point has already been dropped here. A read whose
// node changed while it was in flight is answered again instead of being trusted.
//
// A ref head this client's own commit just wrote is kept without a watch (re-arming one would
// cost a read per head per commit). Every head write sets the clock in the same multi (rule
// 1), so the clock's version counts commits: while each of our commits finds it one past our
// previous one, no other commit landed in between, and a head we kept at zxid Z is still the
// head at any read point from Z to our last commit. At any other read point it is read again,
// watched.
//
// Every slot has a serial, bumped whenever what it holds is replaced, dropped or evicted (a
// watch event, a node kept over it, a stale kept node forgotten, the cache emptied for room,
// a session event). A Lookup records the serial it finished at, so changed_since() tells a
// validated attempt (docs/transactions.md, "Isolation") that a head it read, watched or kept,
// may no longer be the head. wait_moved() waits for that move: a barging yield waits so for
// the claimant's commit (or release), whose setData of the tag fires the tag slot's watch.
//
// V6 (docs/transactions.md): a lookup that finish_newest() finished counts as a live reader
// of its slot while it or a copy lives. A watch event on a slot with live readers posts
// a watched read of the node to the client's callback thread (the ZooKeeper thread never
// sends), so the attempt's retry finds the new head on its way; a slot nobody reads costs an
// event nothing more. An attempt gives its heads back before its multi, whose own writes fire
// their watches (Transaction::apply_result).

#include <avout/deadline.hpp>
#include <avout/zookeeper_session.hpp>

#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace avout::detail {

class CallbackExecutor;

class NodeCache {
 public:
  /// A node being looked up: already known, or a reply on its way.
  struct Lookup {
    std::string path;
    std::optional<NodeData> known;
    std::shared_future<NodeData> reply;
    std::uint64_t ticket = 0;                  // the slot's serial (and session generation)
    std::optional<std::int64_t> unwatched_at;  // `known` has no watch: kept at this zxid
    bool watched = false;  // finished from a watched read: changed_since() can tell
    /// Set by finish_newest(): while any copy lives, a watch event on the slot reads the node
    /// ahead (V6). Reset it to stop; never while holding the cache's lock.
    std::shared_ptr<void> reading;
    /// Finished from a node this client's own commit kept (at `unwatched_at`).
    bool kept() const { return !watched && unwatched_at.has_value(); }
  };

  /// A cache over `session`; `callbacks` (null: none) runs the reads ahead that watch events
  /// on heads live attempts read ask for (V6).
  explicit NodeCache(ZooKeeperSession& session,
                     std::shared_ptr<CallbackExecutor> callbacks = nullptr);
  ~NodeCache();
  NodeCache(const NodeCache&) = delete;
  NodeCache& operator=(const NodeCache&) = delete;

  /// Starts looking up the node at `path`: from the cache, a read already in flight, or a
  /// new read (watched when no watch covers the path yet).
  Lookup begin(const std::string& path);
  /// The node as of now or later; throws NoNode when absent. Without a read point, a node
  /// kept unwatched is read again.
  NodeData finish(Lookup& lookup, std::optional<std::int64_t> read_point = std::nullopt);
  /// The newest node without a read point (a validated attempt's read): a watched entry, a
  /// node kept from the current run of this client's own commits, or a watched get. Sets
  /// `lookup.reading`: the slot counts a live reader (V6).
  NodeData finish_newest(Lookup& lookup);
  /// True when the node `lookup` finished with may no longer be the node: its watch fired, or
  /// (watched or kept) its slot's serial moved on: replaced, dropped or evicted since. False
  /// when that cannot be told (a plain unwatched read).
  bool changed_since(const Lookup& lookup) const;
  /// Waits until the slot `lookup` finished at has moved (its serial changed: a watch event, a
  /// replacement, a session event, eviction), or `deadline` expires; true when it moved. A
  /// slot installed unwatched gets no event: the wait then lasts until the deadline.
  bool wait_moved(const Lookup& lookup, const Deadline& deadline) const;
  /// How a set of finished lookups stands as one view (rule V3 of docs/transactions.md).
  enum class View {
    consistent,  ///< every node is the node as of one moment: the newest watched read, or
                 ///< the end of the run of own commits the kept ones come from
    changed,     ///< a node changed since (changed_since), or one cannot be told
    kept_stale,  ///< unchanged, but kept nodes are not all of the current run, or a node is
                 ///< newer than its end: read the kept ones again, watched
  };
  /// Judges `reads` (each lookup with the mzxid of the node it finished with), under one lock.
  View judge(const std::vector<std::pair<const Lookup*, std::int64_t>>& reads) const;
  /// Starts a watched read of `path`, dropping a node kept there unwatched first.
  Lookup begin_watched(const std::string& path);
  /// Reads `path` ahead, watched, for the next attempt (V6); counted in prefetch_tally()
  /// as used by the next lookup of it, or wasted when dropped first. A watch event on a slot
  /// with live readers does the same on the callback thread. With `read_mzxid` (the node the
  /// attempt read), nothing is read when the slot holds a newer node kept from the current
  /// run of this client's commits: a sibling thread's commit, already the node to read.
  void prefetch(const std::string& path, std::optional<std::int64_t> read_mzxid = std::nullopt);
  /// Reads `path` ahead for the next transaction (after a commit changed it).
  void refresh(const std::string& path) { (void)begin(path); }
  /// Keeps `nodes` (path and node), which this client's commit at `zxid` wrote, without a
  /// watch; `clock_version` is the clock's version that commit set. Valid as said above.
  /// Skips a path whose watched read is cached or in flight: that one is as new or newer.
  /// They become the calling thread's last kept nodes (see rearm_stale).
  void keep_unwatched(std::vector<std::pair<std::string, NodeData>> nodes, std::int64_t zxid,
                      std::int32_t clock_version);
  /// Reads again, watched and pipelined, those of the calling thread's last kept nodes that
  /// `read_point` no longer proves current, when its last transaction asked for the heads its
  /// predecessor kept (a thread looping over the same refs). Other unwatched nodes are read
  /// again when asked for.
  void rearm_stale(std::int64_t read_point);

  /// This client's newest commit, while no commit of another is known to have come after it
  /// (the end of its run): its zxid and the clock's version it set.
  struct OwnCommit {
    std::int64_t zxid = 0;
    std::int32_t clock_version = 0;
  };
  /// If no commit landed after it, every node found here with an mzxid up to its zxid is
  /// still the node. nullopt before this client's first commit and after a session event.
  std::optional<OwnCommit> last_own_commit() const;

  struct State;

 private:
  // finish() and finish_newest(): `current_run` judges a kept node at the current run's end
  // and takes the slot's interest (V6).
  NodeData finish_at(Lookup& lookup, std::optional<std::int64_t> read_point, bool current_run);

  ZooKeeperSession& session_;
  std::shared_ptr<State> state_;
  std::uint64_t listener_ = 0;
};

}  // namespace avout::detail
