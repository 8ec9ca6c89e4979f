#pragma once
// Values kept in ZooKeeper itself: a capability of the ZooKeeper store's ReferenceData that
// the core finds by dynamic_cast. It is not part of the store interface (backend.hpp), so a
// store author never sees ZooKeeper operations.

#include <avout/backend.hpp>
#include <avout/zookeeper_session.hpp>

#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace avout::detail {

/// A ReferenceData whose values are ZooKeeper nodes: a value can be created by the commit
/// multi itself (no round trip of its own, and nothing to erase when the multi fails).
class ZooKeeperHeldValues {
 public:
  virtual ~ZooKeeperHeldValues() = default;
  /// The create that stores `value` at `point` as one operation of the commit multi.
  /// Throws ValueTooLarge before anything is sent when `value` exceeds the node limit.
  virtual op::Create commit_operation(const Bytes& value, const Point& point) = 0;
};

/// An AtomState whose cell is a ZooKeeper node: watches use the node itself, no separate
/// notification node (zookeeper::node_path finds it).
class ZooKeeperNodeAtom {
 public:
  virtual ~ZooKeeperNodeAtom() = default;
  /// The node that holds the atom's value.
  virtual std::string node_path() const = 0;
};

/// The node holding the atom's value when `state` is a ZooKeeperNodeAtom; empty otherwise.
inline std::string held_node_path(const AtomState& state) {
  const auto* node = dynamic_cast<const ZooKeeperNodeAtom*>(&state);
  return node ? node->node_path() : std::string{};
}

/// The in-multi create of `value` at `point` when `data` holds its values in ZooKeeper;
/// nullopt for any other store (the core then writes the value with set() first).
inline std::optional<op::Create> commit_operation(ReferenceData& data, const Bytes& value,
                                                  const Point& point) {
  if (auto* held = dynamic_cast<ZooKeeperHeldValues*>(&data)) {
    return held->commit_operation(value, point);
  }
  return std::nullopt;
}

/// `Decorator` (a ReferenceData that wraps another) which keeps the in-multi create of the
/// data it wraps: a decorated ZooKeeper store commits as the ZooKeeper store itself does.
template <class Decorator>
class HeldValuesKept final : public Decorator, public ZooKeeperHeldValues {
 public:
  /// `held` is the capability of the ReferenceData the decorator owns.
  template <class... Args>
  explicit HeldValuesKept(ZooKeeperHeldValues& held, Args&&... args)
      : Decorator(std::forward<Args>(args)...), held_(held) {}
  op::Create commit_operation(const Bytes& value, const Point& point) override {
    return held_.commit_operation(value, point);
  }

 private:
  ZooKeeperHeldValues& held_;  // the wrapped ReferenceData, owned by the decorator
};

/// `Decorator(std::move(inner), args...)`, keeping ZooKeeperHeldValues when `inner` has it.
template <class Decorator, class... Args>
std::unique_ptr<ReferenceData> decorate(std::unique_ptr<ReferenceData> inner, Args&&... args) {
  if (auto* held = dynamic_cast<ZooKeeperHeldValues*>(inner.get())) {
    return std::make_unique<HeldValuesKept<Decorator>>(*held, std::move(inner),
                                                       std::forward<Args>(args)...);
  }
  return std::make_unique<Decorator>(std::move(inner), std::forward<Args>(args)...);
}

}  // namespace avout::detail
