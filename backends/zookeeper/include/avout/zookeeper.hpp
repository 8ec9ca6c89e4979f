#pragma once
// avout::zookeeper::Store: values kept in ZooKeeper nodes, the default store of a Client.

#include <avout/backend.hpp>
#include <avout/export.hpp>
#include <avout/zookeeper_session.hpp>

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace avout::zookeeper {

/// The largest value a ZooKeeper node takes here: jute.maxbuffer (1 MiB) less a margin for
/// the request's own framing and the envelope.
inline constexpr std::size_t max_node_value = 1000 * 1000;

/// Keeps atom values and ref versions in znodes under `root`.
class AVOUT_API Store final : public avout::Store {
 public:
  /// Uses `session` (which must outlive the store); nodes live under `root`.
  explicit Store(ZooKeeperSession& session, std::string root = "/avout");
  std::string description() const override;
  /// {"zookeeper", "default"}: a deployment has one ZooKeeper ensemble, named by its client.
  StoreIdentity identity() const override { return {"zookeeper", "default"}; }
  std::size_t max_value_size() const override { return max_node_value; }
  std::unique_ptr<AtomState> atom_state(const std::string& name) override;
  std::unique_ptr<ReferenceData> reference_data(const std::string& name) override;
  /// Creates every value with one multi of creates (one round trip; several when together
  /// they exceed what one request takes). All or none of a multi lands; an existing point
  /// throws BackendError and nothing of its multi is written.
  void set_values(std::span<const PointValue> values) override;
  /// Reads every value with pipelined gets on the session: one round trip.
  std::vector<std::optional<Bytes>> get_values(std::span<const PointRead> reads) override;

 private:
  ZooKeeperSession& session_;
  std::string root_;
};

/// The ZooKeeper node holding an atom's value when `state` was made by a zookeeper::Store
/// (watches then use that node directly); empty for any other store's AtomState.
AVOUT_API std::string node_path(const AtomState& state);

}  // namespace avout::zookeeper
