#pragma once
// A directed graph of transactions whose edges carry a kind (a bit, so that a search names
// the kinds it may follow) and the key that caused them: what the Elle-style checker
// (support/elle_checker.hpp) searches for cycles, first by strongly connected components,
// then by the shortest cycle inside one.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace avout::testing {

/// Nodes 0..size-1 and their outgoing edges.
class DependencyGraph {
 public:
  /// One edge: its target, its kind (one bit) and the key that caused it (may be empty).
  struct Edge {
    int to;
    std::uint8_t kind;
    std::string key;
  };
  /// One step of a path: the node left and the edge taken.
  using Step = std::pair<int, Edge>;

  /// A graph of `size` nodes and no edges.
  explicit DependencyGraph(std::size_t size) : edges_(size) {}
  /// Adds from -> to.
  void add(int from, int to, std::uint8_t kind, std::string key);
  /// The number of nodes.
  std::size_t size() const { return edges_.size(); }
  /// The edges leaving `node`.
  const std::vector<Edge>& out(int node) const { return edges_[static_cast<std::size_t>(node)]; }
  /// Strongly connected components over the edges whose kind is in `mask` (Tarjan,
  /// iterative: deep graphs do not exhaust the stack): each node's component, -1 for a node
  /// alone in its own.
  std::vector<int> components(std::uint8_t mask) const;
  /// The shortest path from `from` to `to` over edges of `mask` that stays inside `from`'s
  /// component of `component` (breadth first); empty when there is none or `from` is alone
  /// in its component. Not thread safe.
  std::vector<Step> path(int from, int to, std::uint8_t mask,
                         const std::vector<int>& component) const;

 private:
  std::vector<std::vector<Edge>> edges_;
  mutable std::vector<int> seen_;                            // path's marks
  mutable std::vector<std::pair<int, const Edge*>> parent_;  // path's way back
  mutable int stamp_ = 0;                                    // the current path's mark
};

}  // namespace avout::testing
