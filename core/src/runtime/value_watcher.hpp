#pragma once
// Cross-process watches of one stored value (an atom or a ref): a persistent ZooKeeper watch
// announces changes; the value is then read on the client's callback thread and each watch is
// called with (old bytes, new bytes). Changes in quick succession may coalesce.

#include <avout/bytes.hpp>
#include <avout/detail/typed_watch.hpp>
#include <avout/zookeeper_session.hpp>

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace avout::detail {

class CallbackExecutor;
class SessionDeaths;

class ValueWatcher : public std::enable_shared_from_this<ValueWatcher> {
 public:
  /// `read` gives the current value's bytes; it runs on the callback thread. With `deaths`
  /// (a value held outside ZooKeeper, whose writer notices its change after storing it) the
  /// value is also read again whenever a session of the deployment ends: a writer that died
  /// between its write and its notice leaves no watch behind on an old value.
  ValueWatcher(ZooKeeperSession& session, std::string watch_path, std::string name,
               std::function<Bytes()> read, std::shared_ptr<CallbackExecutor> callbacks,
               std::shared_ptr<SessionDeaths> deaths = nullptr);
  ~ValueWatcher();
  /// Adds or replaces the watch `key`.
  void add(const std::string& key, BytesWatch watch);
  /// Removes the watch `key` (no error when absent). Returns once no call of it runs and
  /// none will, except on the callback thread itself (a watch removing itself or another
  /// while it runs), where waiting would never end: there no later call of it starts.
  void remove(const std::string& key);

 private:
  // Returns once the session answered a request sent after the watch's arm (or could not:
  // the arm is then retried, and the watch looks again once it is in place).
  void wait_for_arm();
  // Reads the value and calls the watches if it changed; a failed read is retried.
  void on_change(int failed_reads);
  // Calls the watch `key` with (previous, current) unless it was removed meanwhile.
  void call(const std::string& key, const Bytes& previous, const Bytes& current);
  // Reads retried after a change (about 100 ms apart) before the change is given up.
  static constexpr int max_failed_reads = 300;

  ZooKeeperSession& session_;
  std::string watch_path_;
  std::string name_;
  std::function<Bytes()> read_;
  std::shared_ptr<CallbackExecutor> callbacks_;
  std::shared_ptr<SessionDeaths> deaths_;

  std::mutex mutex_;  // guards the members below
  std::map<std::string, BytesWatch> watches_;
  std::optional<std::string> calling_;  // the watch running now, on calling_thread_
  std::thread::id calling_thread_;
  std::condition_variable called_;  // a call ended
  std::shared_ptr<void> subscription_;
  std::uint64_t deaths_listener_ = 0;  // while subscribed, with deaths_
  Bytes last_seen_;
};

}  // namespace avout::detail
