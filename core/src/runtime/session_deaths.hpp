#pragma once
// Session deaths: tells listeners when a client session of the deployment ends (its
// liveness node, docs/transactions.md rule 9, goes), for what only a dead process can leave
// unfinished: an atom value stored in Redis or PostgreSQL whose change notice its writer never
// sent. One children watch per client, re-armed on every event and on every new session.

#include <avout/zookeeper_session.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace avout::detail {

class CallbackExecutor;

class SessionDeaths : public std::enable_shared_from_this<SessionDeaths> {
 public:
  /// Watches the children of `folder` (the deployment's liveness nodes) once a listener is
  /// added; listeners and the watch's listings run on the callback thread.
  SessionDeaths(ZooKeeperSession& session, std::string folder,
                std::shared_ptr<CallbackExecutor> callbacks);
  ~SessionDeaths();
  SessionDeaths(const SessionDeaths&) = delete;
  SessionDeaths& operator=(const SessionDeaths&) = delete;

  /// Calls `listener` on the callback thread after each listing that shows a session gone
  /// (also when the watch could have missed one: after this client's own session changed).
  /// Returns an id for remove.
  std::uint64_t add(std::function<void()> listener);
  /// Stops calling the listener `id`.
  void remove(std::uint64_t id);

 private:
  // Lists the folder with a watch and tells the listeners of sessions gone since the last
  // listing; a failed listing is tried again shortly.
  void list();
  void post_list(std::chrono::milliseconds delay);
  void tell();

  ZooKeeperSession& session_;
  std::string folder_;
  std::shared_ptr<CallbackExecutor> callbacks_;
  std::uint64_t session_listener_ = 0;

  std::mutex mutex_;  // guards the members below
  bool started_ = false;
  std::uint64_t next_id_ = 0;
  std::map<std::uint64_t, std::function<void()>> listeners_;
  std::set<std::string> alive_;
};

}  // namespace avout::detail
