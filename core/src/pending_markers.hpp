#pragma once
// Commit markers of landed commits, waiting to be removed inside a later commit multi of the
// same client (docs/transactions.md rule 16), so a commit costs ZooKeeper one write.

#include <avout/zookeeper_session.hpp>

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace avout::detail {

/// One client's markers whose commits are known to have landed: nobody resolves them again.
class PendingMarkers {
 public:
  /// Markers of `session`, removed there at the latest when this is destroyed.
  explicit PendingMarkers(ZooKeeperSession& session) : session_(session) {}
  /// Removes every marker still pending (the client closes; gc removes what this misses).
  ~PendingMarkers();
  PendingMarkers(const PendingMarkers&) = delete;
  PendingMarkers& operator=(const PendingMarkers&) = delete;

  /// Queues the marker of a commit known to have landed.
  void add(std::string marker);
  /// Takes up to `most` markers for one commit multi to remove.
  std::vector<std::string> take(std::size_t most);
  /// Gives back markers taken by a commit whose multi did not (or may not have) removed them.
  void give_back(std::vector<std::string> markers);

 private:
  ZooKeeperSession& session_;
  std::mutex mutex_;
  std::vector<std::string> markers_;
};

}  // namespace avout::detail
