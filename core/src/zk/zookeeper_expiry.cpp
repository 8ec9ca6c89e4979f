#include "zk/zookeeper_expiry.hpp"

#include "zk/zookeeper_handle.hpp"

#include <condition_variable>
#include <mutex>

namespace avout::detail {
namespace {

// Resumes `session` on a twin handle and closes it, which ends the session on the server
// unless the session's own handle took it back in between. False when the twin found the
// session gone (or got no answer).
bool closed_on_twin(const SessionOptions& options, const clientid_t& session) {
  std::mutex mutex;
  std::condition_variable changed;
  int state = 0;
  {
    Handle twin(
        options,
        [&](int new_state) {
          std::lock_guard lock(mutex);
          state = new_state;
          changed.notify_all();
        },
        &session);
    std::unique_lock lock(mutex);
    changed.wait_for(lock, options.connect_timeout, [&] {
      return state == ZOO_CONNECTED_STATE || state == ZOO_EXPIRED_SESSION_STATE;
    });
  }  // a connected twin sends the session's close and awaits its reply
  return state == ZOO_CONNECTED_STATE;
}

}  // namespace

void end_session_from_outside(zhandle_t* handle, const SessionOptions& options) {
  const clientid_t session = *zoo_client_id(handle);
  SessionOptions twin_options = options;
  twin_options.logger = [](LogLevel, std::string_view) {};  // a twin's chatter helps no one
  zoo_set_servers(handle, "127.0.0.1:1");
  struct RestoreServers {
    zhandle_t* handle;
    const std::string& hosts;
    ~RestoreServers() { zoo_set_servers(handle, hosts.c_str()); }
  } restore{handle, options.hosts};
  // The handle may reconnect (to the old host list) between a twin's connect and close: only
  // a twin that finds the session gone proves it ended.
  for (int twins = 0; twins < 8; ++twins) {
    if (!closed_on_twin(twin_options, session)) return;
  }
}

}  // namespace avout::detail
