#pragma once
// avout::zookeeper::Store: values kept in ZooKeeper nodes, the default store of a Client.

#include <avout/backend.hpp>
#include <avout/zookeeper_session.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace avout::zookeeper {

/// The largest value a ZooKeeper node takes here: jute.maxbuffer (1 MiB) less a margin for
/// the request's own framing and the envelope.
inline constexpr std::size_t max_node_value = 1000 * 1000;

/// Keeps atom values and ref versions in znodes under `root`.
class Store final : public avout::Store {
 public:
  /// Uses `session` (which must outlive the store); nodes live under `root`.
  explicit Store(ZooKeeperSession& session, std::string root = "/avout");
  std::string description() const override;
  std::size_t max_value_size() const override { return max_node_value; }
  std::unique_ptr<AtomState> atom_state(const std::string& name) override;
  std::unique_ptr<ReferenceData> reference_data(const std::string& name) override;

 private:
  ZooKeeperSession& session_;
  std::string root_;
};

}  // namespace avout::zookeeper
