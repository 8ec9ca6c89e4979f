#include "support/dependency_graph.hpp"

#include <algorithm>

namespace avout::testing {

void DependencyGraph::add(int from, int to, std::uint8_t kind, std::string key) {
  edges_[static_cast<std::size_t>(from)].push_back({to, kind, std::move(key)});
}

std::vector<int> DependencyGraph::components(std::uint8_t mask) const {
  const int n = static_cast<int>(edges_.size());
  std::vector<int> index(static_cast<std::size_t>(n), -1), low(static_cast<std::size_t>(n), 0);
  std::vector<int> component(static_cast<std::size_t>(n), -1);
  std::vector<char> on_stack(static_cast<std::size_t>(n), 0);
  std::vector<int> stack;
  std::vector<std::pair<int, std::size_t>> calls;  // node, next edge
  int next = 0, components = 0;
  for (int root = 0; root < n; ++root) {
    if (index[static_cast<std::size_t>(root)] >= 0) continue;
    calls.push_back({root, 0});
    while (!calls.empty()) {
      auto& [node, at] = calls.back();
      const auto u = static_cast<std::size_t>(node);
      if (at == 0 && index[u] < 0) {
        index[u] = low[u] = next++;
        stack.push_back(node);
        on_stack[u] = 1;
      }
      bool descended = false;
      while (at < edges_[u].size()) {
        const auto& edge = edges_[u][at++];
        if (!(edge.kind & mask)) continue;
        const auto v = static_cast<std::size_t>(edge.to);
        if (index[v] < 0) {
          calls.push_back({edge.to, 0});
          descended = true;
          break;
        }
        if (on_stack[v]) low[u] = std::min(low[u], index[v]);
      }
      if (descended) continue;
      if (low[u] == index[u]) {
        std::vector<int> members;
        int member;
        do {
          member = stack.back();
          stack.pop_back();
          on_stack[static_cast<std::size_t>(member)] = 0;
          members.push_back(member);
        } while (member != node);
        if (members.size() > 1) {
          for (int m : members) component[static_cast<std::size_t>(m)] = components;
          ++components;
        }
      }
      const int done = node;
      calls.pop_back();
      if (!calls.empty()) {
        const auto parent = static_cast<std::size_t>(calls.back().first);
        low[parent] = std::min(low[parent], low[static_cast<std::size_t>(done)]);
      }
    }
  }
  return component;
}

std::vector<DependencyGraph::Step> DependencyGraph::path(int from, int to, std::uint8_t mask,
                                                         const std::vector<int>& component) const {
  const int within = component[static_cast<std::size_t>(from)];
  if (within < 0) return {};  // alone in its component: on no cycle
  std::vector<int> frontier{from};
  // Scratch kept across searches: a search marks what it saw with a stamp of its own, so
  // the many searches of one check clear nothing.
  ++stamp_;
  seen_.resize(edges_.size(), 0);
  parent_.resize(edges_.size());
  seen_[static_cast<std::size_t>(from)] = stamp_;
  while (!frontier.empty()) {
    std::vector<int> next;
    for (int node : frontier) {
      for (const auto& edge : edges_[static_cast<std::size_t>(node)]) {
        const auto v = static_cast<std::size_t>(edge.to);
        if (!(edge.kind & mask) || seen_[v] == stamp_ || component[v] != within) continue;
        seen_[v] = stamp_;
        parent_[v] = {node, &edge};
        if (edge.to == to) {
          std::vector<Step> steps;
          for (int at = to; at != from;) {
            const auto [before, via] = parent_[static_cast<std::size_t>(at)];
            steps.push_back({before, *via});
            at = before;
          }
          std::reverse(steps.begin(), steps.end());
          return steps;
        }
        next.push_back(edge.to);
      }
    }
    frontier = std::move(next);
  }
  return {};
}

}  // namespace avout::testing
