#include "agents/agent_removal.hpp"

#include "records/agent_head.hpp"

#include <avout/errors.hpp>

#include <limits>
#include <memory>

namespace avout::detail {

namespace {

// No head names them any more: a batch still writing one sees its multi fail on the
// tombstone and erases its own.
void erase_values(Runtime& runtime, const std::string& name, Store& store) {
  std::unique_ptr<ReferenceData> data(
      store.reference_data(runtime.layout().value_key("agent", name)));
  for (const Point& point : data->points()) data->erase(point);
}

}  // namespace

bool remove_agent(Runtime& runtime, const std::string& name, Store& store) {
  validate_path(name);
  auto& session = runtime.session();
  const std::string head = runtime.layout().agent_head(name);
  bool lost = false;  // a write of the tombstone went out whose reply was lost
  for (std::size_t attempt = 0; attempt < runtime.options().retry_limit; ++attempt) {
    session.sync(head);
    NodeData node;
    try {
      node = session.get(head);
    } catch (const NoNode&) {
      return false;
    }
    if (node.data.empty()) return false;  // only the parent of deeper names
    if (is_agent_tombstone(node.data)) {
      erase_values(runtime, name, store);
      return lost;  // ours, its reply lost, or another remover's
    }
    if (node.stat.version == std::numeric_limits<std::int32_t>::max()) {
      throw VersionLimitReached("agent " + name + ": its head " + head + " cannot be written");
    }
    try {
      (void)session.set(head, encode_agent_tombstone(), node.stat.version);
    } catch (const BadVersion&) {
      continue;  // a batch committed first: read the head again
    } catch (const ConnectionLoss&) {
      lost = true;
      continue;
    }
    erase_values(runtime, name, store);
    return true;
  }
  throw RetryLimitExceeded("agent " + name + ": batches kept moving its head while removing it");
}

}  // namespace avout::detail
