#include "queue/queue_names.hpp"
#include "base/hex.hpp"
#include "base/unique_ids.hpp"

#include <algorithm>
#include <cctype>

namespace avout::detail {

bool is_queue_node(std::string_view name, const NodeKind& kind) {
  const std::size_t id_begin = kind.kind.size() + 1;
  if (!name.starts_with(kind.kind) || name.size() <= id_begin || name[id_begin - 1] != '-') {
    return false;
  }
  if (!sequence_of(name)) return false;
  // The id ends at the dash before the sequence (the one before its sign, when negative).
  std::size_t separator = name.rfind('-');
  if (name[separator - 1] == '-') --separator;
  if (separator <= id_begin) return false;
  const auto id = name.substr(id_begin, separator - id_begin);
  if (kind.hex_id_digits == 0) return true;
  return id.size() == kind.hex_id_digits && std::all_of(id.begin(), id.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) != 0;
         });
}

std::optional<std::int32_t> sequence_of(std::string_view name) { return sequence_after_dash(name); }

std::vector<std::string> in_queue_order(std::vector<std::string> names, const NodeKind& kind) {
  std::erase_if(names, [&](const std::string& name) { return !is_queue_node(name, kind); });
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return SequenceOrder{}(*sequence_of(a), *sequence_of(b));
  });
  return names;
}

std::string prefix_for(const NodeKind& kind, std::string_view id) {
  return kind.kind + "-" + std::string(id) + "-";
}

std::string fresh_prefix(const NodeKind& kind, std::string_view mark) {
  if (kind.hex_id_digits > 0) return prefix_for(kind, hex(unique_writer_id(), kind.hex_id_digits));
  return prefix_for(kind, std::string(mark) + unique_uuid());
}

std::string name_of(std::string_view path) { return std::string(path.substr(path.rfind('/') + 1)); }

}  // namespace avout::detail
