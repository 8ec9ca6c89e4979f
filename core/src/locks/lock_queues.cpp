#include "locks/lock_queues.hpp"

namespace avout::detail {

NodeKind lock_node_kind(LockQueue which) {
  constexpr std::size_t id_digits = 16;
  switch (which) {
    case LockQueue::writers: return NodeKind{"w", id_digits};
    case LockQueue::readers: return NodeKind{"r", id_digits};
    case LockQueue::gates: return NodeKind{"g", id_digits};
  }
  return NodeKind{"w", id_digits};  // not reached: every queue is named above
}

LockQueues::LockQueues(ZooKeeperSession& session, const std::string& path)
    : writers(session, path + "/writers", lock_node_kind(LockQueue::writers)),
      readers(session, path + "/readers", lock_node_kind(LockQueue::readers)),
      gates(session, path + "/gates", lock_node_kind(LockQueue::gates)) {}

SequentialQueue& LockQueues::operator[](LockQueue which) {
  switch (which) {
    case LockQueue::writers: return writers;
    case LockQueue::readers: return readers;
    case LockQueue::gates: return gates;
  }
  return writers;  // not reached: every queue is named above
}

SequentialQueue& LockQueues::holding(const std::string& node) {
  const std::string folder = node.substr(0, node.rfind('/'));
  if (folder == readers.folder()) return readers;
  if (folder == gates.folder()) return gates;
  return writers;
}

}  // namespace avout::detail
