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

#include <avout/zookeeper_session.hpp>

#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>

namespace avout::detail {

class NodeCache {
 public:
  /// A node being looked up: already known, or a reply on its way.
  struct Lookup {
    std::string path;
    std::optional<NodeData> known;
    std::shared_future<NodeData> reply;
    std::uint64_t ticket = 0;
  };

  explicit NodeCache(ZooKeeperSession& session);
  ~NodeCache();
  NodeCache(const NodeCache&) = delete;
  NodeCache& operator=(const NodeCache&) = delete;

  /// Starts looking up the node at `path`: from the cache, a read already in flight, or a
  /// new read (watched when no watch covers the path yet).
  Lookup begin(const std::string& path);
  /// The node as of now or later; throws NoNode when absent.
  NodeData finish(Lookup& lookup);
  /// Reads `path` ahead for the next transaction (after a commit changed it).
  void refresh(const std::string& path) { (void)begin(path); }

  struct State;

 private:
  ZooKeeperSession& session_;
  std::shared_ptr<State> state_;
  std::uint64_t listener_ = 0;
};

}  // namespace avout::detail
