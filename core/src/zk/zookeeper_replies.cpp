#include "zk/zookeeper_replies.hpp"

#include "zk/request_tally.hpp"

namespace avout::detail {

namespace {
template <typename T>
std::unique_ptr<Reply<T>> take(const void* data) {
  std::unique_ptr<Reply<T>> reply(static_cast<Reply<T>*>(const_cast<void*>(data)));
  if (reply->owner != nullptr) reply->owner->request_finished();
  return reply;
}
}  // namespace

void complete_data(int rc, const char* value, int length, const Stat* stat, const void* data) {
  auto reply = take<NodeData>(data);
  reply->drop_unset_watch(rc == ZOK);
  if (rc != ZOK) return reply->fail(rc);
  NodeData node;
  if (value != nullptr && length > 0) node.data.assign(value, value + length);
  node.stat = to_node_stat(*stat);
  reply->promise.set_value(std::move(node));
}

void complete_exists(int rc, const Stat* stat, const void* data) {
  auto reply = take<std::optional<NodeStat>>(data);
  reply->drop_unset_watch(rc == ZOK || rc == ZNONODE);
  if (rc == ZNONODE) return reply->promise.set_value(std::nullopt);
  if (rc != ZOK) return reply->fail(rc);
  reply->promise.set_value(to_node_stat(*stat));
}

void complete_stat(int rc, const Stat* stat, const void* data) {
  auto reply = take<NodeStat>(data);
  if (rc != ZOK) return reply->fail(rc);
  reply->promise.set_value(to_node_stat(*stat));
}

void complete_string(int rc, const char* value, const void* data) {
  auto reply = take<std::string>(data);
  if (rc != ZOK) return reply->fail(rc);
  reply->promise.set_value(value != nullptr ? std::string(value) : std::string());
}

void complete_void(int rc, const void* data) {
  auto reply = take<void>(data);
  if (rc != ZOK) return reply->fail(rc);
  reply->promise.set_value();
}

void complete_sync(int rc, const char*, const void* data) { complete_void(rc, data); }

void complete_strings(int rc, const String_vector* strings, const void* data) {
  auto reply = take<std::vector<std::string>>(data);
  reply->drop_unset_watch(rc == ZOK);
  if (rc != ZOK) return reply->fail(rc);
  std::vector<std::string> names;
  if (strings != nullptr) {
    names.reserve(static_cast<std::size_t>(strings->count));
    for (int i = 0; i < strings->count; ++i) names.emplace_back(strings->data[i]);
  }
  reply->promise.set_value(std::move(names));
}

void complete_multi(int rc, const void* data) {
  std::unique_ptr<MultiReply> reply(static_cast<MultiReply*>(const_cast<void*>(data)));
  if (reply->owner != nullptr) reply->owner->request_finished();
  if (is_connection_level(rc)) {
    return reply->promise.set_exception(zookeeper_error(rc, "multi", ""));
  }
  MultiResult result;
  if (rc == ZOK) {
    result.committed = true;
    result.results.resize(reply->operations.size());
    for (std::size_t i = 0; i < reply->operations.size(); ++i) {
      const zoo_op_t& operation = reply->operations[i];
      if (operation.type == ZOO_CREATE_OP) {
        result.results[i].created_path = operation.create_op.buf;
      } else if (operation.type == ZOO_SETDATA_OP) {
        result.results[i].stat = to_node_stat(*operation.set_op.stat);
      }
    }
    return reply->promise.set_value(std::move(result));
  }
  count_failed_multi();
  // ZooKeeper reports ZOK for the ops before the failing one and a runtime inconsistency for
  // those after it; the first other code is the culprit.
  result.failed_code = rc;
  for (std::size_t i = 0; i < reply->results.size(); ++i) {
    const int code = reply->results[i].err;
    if (code != ZOK && code != ZRUNTIMEINCONSISTENCY) {
      result.failed_index = i;
      result.failed_code = code;
      break;
    }
  }
  reply->promise.set_value(std::move(result));
}

}  // namespace avout::detail
