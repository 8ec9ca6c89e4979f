#include "runtime/layout.hpp"
#include "runtime/zookeeper_backend.hpp"
#include "runtime/zookeeper_held_values.hpp"

#include <avout/client.hpp>
#include <avout/errors.hpp>
#include <avout/zookeeper.hpp>

#include <charconv>
#include <mutex>
#include <variant>

namespace avout::zookeeper {

namespace {

// What one create adds to a multi request beyond its path and data (header, mode, ACL).
constexpr std::size_t create_overhead = 128;

void check_size(const Bytes& value, const std::string& path) {
  require_fits(value.size(), max_node_value, "zookeeper " + path);
}

std::int32_t parse_version(const std::string& version, const std::string& path) {
  std::int32_t parsed = 0;
  auto [end, error] = std::from_chars(version.data(), version.data() + version.size(), parsed);
  if (error != std::errc() || end != version.data() + version.size()) {
    throw InvalidName("zookeeper " + path + ": \"" + version + "\" is not a node version");
  }
  return parsed;
}

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

// An atom's value: one node; its ZooKeeper data version is the CAS version. A node without
// data at version 0 holds no value yet: it is the parent made for an atom nested below this
// one's name (a value, even an empty one, is never stored at version 0 without data).
class NodeAtomState final : public AtomState, public detail::ZooKeeperNodeAtom {
 public:
  NodeAtomState(ZooKeeperSession& session, std::string path)
      : session_(session), path_(std::move(path)) {}

  Versioned get() override {
    try {
      auto node = session_.get(path_);
      if (holds_no_value(node)) return Versioned{};
      return Versioned{std::move(node.data), std::to_string(node.stat.version)};
    } catch (const NoNode&) {
      return Versioned{};
    }
  }

  bool compare_and_set(const Versioned& expected, Bytes next) override {
    check_size(next, path_);
    try {
      if (expected.exists()) {
        session_.set(path_, next, parse_version(expected.version, path_));
      } else if (next.empty() || !create(next)) {
        // The node is there (or made here for an empty value): fill it in only while it is
        // still an empty parent, else another creator came first.
        if (next.empty()) create({});
        if (!holds_no_value(session_.get(path_))) return false;
        session_.set(path_, next, 0);
      }
      return true;
    } catch (const NodeExists&) {
      return false;
    } catch (const BadVersion&) {
      return false;
    } catch (const NoNode&) {
      return false;
    }
  }

  /// The node holding the value.
  std::string node_path() const override { return path_; }

 private:
  static bool holds_no_value(const NodeData& node) {
    return node.data.empty() && node.stat.version == 0;
  }

  // Creates the node with `data`; false when it exists already.
  bool create(const Bytes& data) {
    session_.create_recursive(parent_of(path_));
    try {
      session_.create(path_, data, CreateMode::persistent);
      return true;
    } catch (const NodeExists&) {
      return false;
    }
  }

  ZooKeeperSession& session_;
  std::string path_;
};

// A ref's versions: one child node per point under the ref's value folder.
class NodeReferenceData final : public ReferenceData, public detail::ZooKeeperHeldValues {
 public:
  NodeReferenceData(ZooKeeperSession& session, std::string name, std::string folder)
      : session_(session), name_(std::move(name)), folder_(std::move(folder)) {}

  std::string name() const override { return name_; }

  void set(Bytes value, const Point& point) override {
    check_size(value, folder_);
    const std::string path = join_path(folder_, point.id);
    try {
      session_.create(path, value, CreateMode::persistent);
    } catch (const NoNode&) {
      session_.create_recursive(folder_);
      session_.create(path, value, CreateMode::persistent);
    } catch (const NodeExists&) {
      throw BackendError("zookeeper " + path + ": point already stored");
    }
  }

  Bytes get(const Point& point) override {
    const std::string path = point_path(point);
    try {
      return session_.get(path).data;
    } catch (const NoNode&) {
      throw MissingPoint("zookeeper ref " + name_ + ": no value at point " + point.id);
    }
  }

  /// The node of the value at `point`.
  std::string point_path(const Point& point) const { return join_path(folder_, point.id); }

  void erase(const Point& point) override {
    // Pipelined, not awaited: later requests of this session see the node gone, and a
    // delete lost with the connection only leaves garbage for gc. Saves a round trip per
    // trimmed version on every commit. Version 0: value nodes are created once and never
    // changed, and rule 1 sends no version -1 ("any") but the clock's.
    (void)session_.remove_async(join_path(folder_, point.id), 0);
  }

  op::Create commit_operation(const Bytes& value, const Point& point) override {
    check_size(value, folder_);
    make_folder();
    return op::Create{join_path(folder_, point.id), value, CreateMode::persistent};
  }

  /// Creates the folder once: it must exist before a multi creates a child in it.
  void make_folder() {
    std::call_once(folder_made_, [this] { session_.create_recursive(folder_); });
  }

  std::vector<Point> points() override {
    std::vector<Point> found;
    try {
      for (auto& child : session_.children(folder_)) found.push_back(Point{std::move(child)});
    } catch (const NoNode&) {
    }
    return found;
  }

 private:
  ZooKeeperSession& session_;
  std::string name_;
  std::string folder_;
  std::once_flag folder_made_;
};

}  // namespace

Store::Store(ZooKeeperSession& session, std::string root)
    : session_(session), root_(std::move(root)) {
  validate_path(root_);
}

std::string Store::description() const { return "zookeeper " + session_.options().hosts; }

std::unique_ptr<AtomState> Store::atom_state(const std::string& name) {
  validate_path(name);
  return std::make_unique<NodeAtomState>(
      session_, detail::Layout(session_.options().chroot, root_).atom(name));
}

std::unique_ptr<ReferenceData> Store::reference_data(const std::string& name) {
  validate_path(name);
  return std::make_unique<NodeReferenceData>(
      session_, name, detail::Layout(session_.options().chroot, root_).ref_values(name));
}

namespace {

// The version set of a batch element, which must have been made by a ZooKeeper store.
NodeReferenceData& own_data(ReferenceData* data, const std::string& store) {
  auto* own = dynamic_cast<NodeReferenceData*>(data);
  if (own == nullptr) {
    throw BackendError(store + ": a batch holds ref " +
                       (data ? data->name() : std::string("(null)")) +
                       ", which this store did not make");
  }
  return *own;
}

}  // namespace

std::vector<std::optional<Bytes>> Store::get_values(std::span<const PointRead> reads) {
  const std::string store = description();
  std::vector<std::string> paths;  // every element checked before anything is sent
  paths.reserve(reads.size());
  for (const auto& r : reads) paths.push_back(own_data(r.data, store).point_path(r.point));
  std::vector<std::future<NodeData>> replies;
  replies.reserve(reads.size());
  for (const auto& path : paths) replies.push_back(session_.get_async(path));
  std::vector<std::optional<Bytes>> values;
  values.reserve(reads.size());
  for (auto& reply : replies) {
    try {
      values.emplace_back(session_.wait(reply).data);
    } catch (const NoNode&) {
      values.emplace_back();
    }
  }
  return values;
}

void Store::set_values(std::span<const PointValue> values) {
  std::vector<op::Create> creates;  // every value checked before anything is sent
  creates.reserve(values.size());
  const std::string store = description();
  for (const auto& v : values)
    creates.push_back(own_data(v.data, store).commit_operation(v.value, v.point));
  // A multi is one request: keep each under the request limit, so a batch of large values
  // becomes several multis (each all or nothing).
  std::vector<Operation> multi;
  std::size_t bytes = 0;
  auto send = [&] {
    if (multi.empty()) return;
    const auto result = session_.multi(multi);
    try {
      result.throw_if_failed(multi);
    } catch (const NodeExists&) {
      const auto& create = std::get<op::Create>(multi[result.failed_index]);
      throw BackendError("zookeeper " + create.path + ": point already stored");
    }
    multi.clear();
    bytes = 0;
  };
  for (auto& create : creates) {
    const std::size_t size = create.path.size() + create.data.size() + create_overhead;
    if (bytes + size > max_node_value) send();
    bytes += size;
    multi.emplace_back(std::move(create));
  }
  send();
}

std::string node_path(const AtomState& state) { return detail::held_node_path(state); }

}  // namespace avout::zookeeper

namespace avout::detail {

std::unique_ptr<Store> make_zookeeper_store(ZooKeeperSession& session, std::string root) {
  return std::make_unique<zookeeper::Store>(session, std::move(root));
}

}  // namespace avout::detail
