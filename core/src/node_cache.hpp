#pragma once
// Ref heads and barging tags cached per client and kept valid by one-shot watches
// (docs/transactions.md rule 12), so a transaction reads the nodes it needs without a round
// trip of their own.
//
// Why it is safe: a watch event reaches this client before the reply of any request sent
// after the watched read, and the event callback runs on the ZooKeeper thread before that
// reply's future is ready. So once a transaction holds its read point (the clock's reply), a
// node that changed at or before the read point has already been dropped here. A read whose
// node changed while it was in flight is answered again instead of being trusted.
//
// A ref head this client's own commit just wrote is kept without a watch (re-arming one would
// cost a read per head per commit), valid only at the read point equal to that commit's zxid:
// every head write sets the clock in the same multi (rule 1), so a read point still at that
// zxid proves nobody wrote any head since. At any other read point it is read again, watched.

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
    std::optional<std::int64_t> unwatched_at;  // `known` has no watch: valid at this zxid only
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
  /// Reads `path` ahead for the next transaction (after a commit changed it).
  void refresh(const std::string& path) { (void)begin(path); }
  /// Keeps `nodes` (path and node), which this client's commit at `zxid` wrote, without a
  /// watch: valid for a transaction whose read point is `zxid` (see above). Skips a path
  /// whose watched read is cached or in flight: that one is as new or newer. They become the
  /// calling thread's last kept nodes (see rearm_stale).
  void keep_unwatched(std::vector<std::pair<std::string, NodeData>> nodes, std::int64_t zxid);
  /// Reads again, watched and pipelined, those of the calling thread's last kept nodes that
  /// `read_point` no longer proves current: a thread's next transaction mostly touches the
  /// refs its last one wrote. Other unwatched nodes are read again when asked for.
  void rearm_stale(std::int64_t read_point);

  struct State;

 private:
  ZooKeeperSession& session_;
  std::shared_ptr<State> state_;
  std::uint64_t listener_ = 0;
};

}  // namespace avout::detail
