#pragma once
// Who may hold, and whom a waiter watches (Curator's LockInternalsDriver as a small value):
// a mutex lets the first node hold, a semaphore the first N, a reader every node with no
// writer ahead. A waiter watches only the nodes whose deletion can change its answer: a
// mutex waiter and a reader one node, so a deletion wakes one waiter (no herd). A semaphore
// waiter needs the N nodes right ahead of it: any of them leaving (a holder, or a waiter that
// gave up) may let it in, while a deletion further ahead leaves that window as it was; no
// single watch is enough once N > 1. Pure: over a queue listed in order.

#include "queue/queue_names.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace avout::detail {

/// A node's turn in its queue.
struct Turn {
  bool holds = false;              ///< it may hold now
  std::vector<std::string> watch;  ///< when not: the names to watch (a deletion: look again);
                                   ///< one for a mutex and a reader, N for a semaphore
  bool vanished = false;           ///< the node is not in its queue (gone with its session)
};

/// How many may hold, and who counts as ahead.
class HoldRule {
 public:
  /// The first `holders` nodes hold (a mutex: 1; a semaphore: N); a waiter watches the
  /// `holders` nodes right ahead of it (a mutex's: its predecessor).
  static HoldRule first(std::size_t holders);
  /// A reader: holds unless a node of `writer_kind` ("<kind>-...") is ahead; watches the
  /// nearest such writer (once it is gone, look again: earlier ones may remain).
  static HoldRule no_writer_ahead(std::string writer_kind);

  /// The turn of the node at `mine` in `line` (in queue order). `mine` may be line.size():
  /// a node queued in another folder, after every node of this one (a reader looking at a
  /// folder of writers or gates).
  Turn turn(const std::vector<std::string>& line, std::size_t mine) const;

 private:
  HoldRule(std::size_t holders, std::string writer_kind);
  std::size_t holders_;      // for first(); 0 for a reader
  std::string writer_kind_;  // for no_writer_ahead(); empty for first()
};

/// The turn of `own` (a name; empty: a node of another folder, after the whole queue) among
/// a folder's raw `children` as listed: the queue of `kind` in order, then `rule`; `vanished`
/// when `own` is not among them.
Turn turn_among(std::vector<std::string> children, const std::string& own, const NodeKind& kind,
                const HoldRule& rule);

}  // namespace avout::detail
