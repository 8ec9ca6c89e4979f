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

#include <avout/zookeeper_session.hpp>

#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace avout::detail {

class NodeCache {
 public:
  /// A node being looked up: already known, or a reply on its way.
  struct Lookup {
    std::string path;
    std::optional<NodeData> known;
    std::shared_future<NodeData> reply;
    std::uint64_t ticket = 0;
    std::optional<std::int64_t> unwatched_at;  // `known` has no watch: kept at this zxid
    bool watched = false;  // finished from a watched read: changed_since() can tell
  };

  explicit NodeCache(ZooKeeperSession& session);
  ~NodeCache();
  NodeCache(const NodeCache&) = delete;
  NodeCache& operator=(const NodeCache&) = delete;

  /// Starts looking up the node at `path`: from the cache, a read already in flight, or a
  /// new read (watched when no watch covers the path yet).
  Lookup begin(const std::string& path);
  /// The node as of now or later; throws NoNode when absent. Without a read point, a node
  /// kept unwatched is read again.
  NodeData finish(Lookup& lookup, std::optional<std::int64_t> read_point = std::nullopt);
  /// True when the node `lookup` finished with has been reported changed since (its watch
  /// fired), so a version check against it is bound to fail. False when that cannot be told:
  /// a node kept unwatched, or one the cache has dropped for room.
  bool changed_since(const Lookup& lookup) const;
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
  /// still the node (a speculative commit's premise, which its multi checks). nullopt before
  /// this client's first commit and after a session event.
  std::optional<OwnCommit> last_own_commit() const;
  /// Tests: makes the last own commit (if any) seem to have set the clock at `version`, a
  /// version a long run reaches only after 2^31 commits.
  void pretend_clock_version_for_testing(std::int32_t version);

  struct State;

 private:
  ZooKeeperSession& session_;
  std::shared_ptr<State> state_;
  std::uint64_t listener_ = 0;
};

}  // namespace avout::detail
