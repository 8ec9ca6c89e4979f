#pragma once
// Completion callbacks of the C client's async calls: each only fulfils a promise.

#include "zk/zookeeper_c.hpp"
#include "zk/zookeeper_errors.hpp"
#include "zk/zookeeper_handle.hpp"

#include <avout/zookeeper_session.hpp>

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace avout::detail {

/// What a pending async call needs when its reply comes: the promise and, for messages,
/// what was asked. Owned by the C client between the call and its completion.
template <typename T>
struct Reply {
  std::promise<T> promise;
  const char* operation;
  std::string path;
  Handle* handle = nullptr;  // set when a watch record rides on the request
  WatchRecord* watch = nullptr;
  Handle* owner = nullptr;  // counts the request as in flight until it completes

  void fail(int code) { promise.set_exception(zookeeper_error(code, operation, path)); }
  // The server sets a watch only on success (and, for exists, on a missing node).
  void drop_unset_watch(bool watch_was_set) {
    if (watch != nullptr && !watch_was_set) handle->drop_watch(watch);
  }
};

inline NodeStat to_node_stat(const Stat& stat) {
  return NodeStat{stat.czxid,      stat.mzxid,      stat.pzxid,    stat.ctime,
                  stat.mtime,      stat.version,    stat.cversion, stat.ephemeralOwner,
                  stat.dataLength, stat.numChildren};
}

void complete_data(int rc, const char* value, int length, const Stat* stat, const void* data);
void complete_exists(int rc, const Stat* stat, const void* data);
void complete_stat(int rc, const Stat* stat, const void* data);
void complete_string(int rc, const char* value, const void* data);
void complete_void(int rc, const void* data);
/// zoo_async reports the path synced; only success matters (a Reply<void>).
void complete_sync(int rc, const char* path, const void* data);
void complete_strings(int rc, const String_vector* strings, const void* data);

/// The buffers a multi request writes its results into, alive until its completion.
struct MultiReply {
  std::promise<MultiResult> promise;
  std::vector<zoo_op_t> operations;
  std::vector<zoo_op_result_t> results;
  std::vector<std::string> paths;  // keeps the op's path strings alive
  std::vector<Bytes> data;         // and their data
  std::vector<std::vector<char>> created_paths;
  std::vector<Stat> stats;
  Handle* owner = nullptr;  // counts the request as in flight until it completes
};
void complete_multi(int rc, const void* data);

}  // namespace avout::detail
