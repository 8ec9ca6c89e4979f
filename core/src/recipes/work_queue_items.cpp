// The work queue's pure parts: the items a take tries, and the node size bound.
#include "recipes/work_queue_items.hpp"
#include "zk/multi_size.hpp"

#include <algorithm>
#include <variant>

namespace avout::detail {

namespace {
// Room for an item node's name ("i-", a uuid, '-', ten digits) and its separator.
constexpr std::size_t item_name_room = 64;
}  // namespace

std::vector<std::string> items_to_try(const std::string& folder, std::vector<std::string> children,
                                      const std::vector<Operation>& pending) {
  std::vector<std::string> paths;
  for (const auto& name : in_queue_order(std::move(children), item_kind)) {
    std::string path = folder + "/" + name;
    const bool taken = std::ranges::any_of(pending, [&](const Operation& operation) {
      const auto* remove = std::get_if<op::Remove>(&operation);
      return remove != nullptr && remove->path == path;
    });
    if (!taken) paths.push_back(std::move(path));
  }
  return paths;
}

bool item_fits(const std::string& folder, std::size_t bytes) {
  return serialized_size(folder.size() + item_name_room, bytes, 0) <= multi_limit;
}

}  // namespace avout::detail
