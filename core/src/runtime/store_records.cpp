#include "runtime/store_records.hpp"

#include "records/store_record.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

namespace {
void require_same(const StoreIdentity& recorded, const StoreIdentity& mine,
                  const std::string& kind, const std::string& name) {
  if (recorded == mine) return;
  throw Mismatch(kind + " " + name + ": its values are in " + recorded.text() + "; opened with " +
                 mine.text());
}
}  // namespace

void claim_store(ZooKeeperSession& session, const Layout& layout, const std::string& kind,
                 const std::string& name, const StoreIdentity& mine, std::size_t retry_limit) {
  const std::string path = layout.store_record(kind, name);
  for (std::size_t round = 0; round < retry_limit; ++round) {
    std::optional<NodeData> node;
    try {
      node = session.get(path);
    } catch (const NoNode&) {
    }
    // An empty node is only the parent of a deeper name's record ("/a" of "/a/b").
    if (node && !node->data.empty()) {
      return require_same(decode_store_record(node->data, path), mine, kind, name);
    }
    try {
      if (node) {
        session.set(path, encode_store_record(mine), node->stat.version);
      } else {
        session.create(path, encode_store_record(mine));
      }
      return;
    } catch (const NodeExists&) {  // another attach recorded first: read its record
    } catch (const BadVersion&) {
    } catch (const NoNode&) {
      // No parent yet (or the empty parent node went): make the parents, then try again.
      session.create_recursive(path.substr(0, path.rfind('/')));
    } catch (const ConnectionLoss&) {  // the write may have landed: the next read tells
    }
  }
  throw RetryLimitExceeded(kind + " " + name + ": could not record its store in " + path);
}

std::optional<StoreIdentity> recorded_store(ZooKeeperSession& session, const Layout& layout,
                                            const std::string& kind, const std::string& name) {
  const std::string path = layout.store_record(kind, name);
  try {
    auto node = session.get(path);
    if (node.data.empty()) return std::nullopt;
    return decode_store_record(node.data, path);
  } catch (const NoNode&) {
    return std::nullopt;
  }
}

}  // namespace avout::detail
