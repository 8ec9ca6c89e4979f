#pragma once
// The markers of a client's landed commits, waiting to ride in a later commit multi (rule 16:
// a commit costs ZooKeeper one write, so its marker is not removed by a write of its own).
// Kept per thread: a marker rides in the next commit of the thread whose commit made it, so
// what one thread's commit sends never depends on what other threads committed (a seed
// replays each thread's requests). A marker only matters while its owner may still resolve
// its commit's outcome (rule 6); one that waits longer is removed by gc, and a commit that
// finds its carried marker gone drops it and sends its multi again.

#include <avout/logger.hpp>
#include <avout/zookeeper_session.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace avout::detail {

/// Landed commits' markers per thread, until a later commit of that thread removes them.
/// Thread safe.
class PendingMarkers {
 public:
  /// At most this many markers wait per thread; beyond, the oldest is removed on its own.
  static constexpr std::size_t per_thread = 64;
  /// At most this many wait in all (a thread that ended leaves its last ones until close).
  /// The oldest beyond it may be carried by another thread's commit in flight: that multi
  /// then finds it gone and goes again without it (commit_with_cleanup).
  static constexpr std::size_t in_all = 1024;

  /// Markers of commits made on `session`; `logger` hears what close could not remove;
  /// `grace` is ClientOptions::marker_grace (a lost commit reply's resolution, rule 6).
  PendingMarkers(ZooKeeperSession& session, Logger logger, std::chrono::milliseconds grace);

  /// The calling thread's markers, oldest first, as many as still fit in a multi that
  /// weighs `bytes` so far (rule 11); their removals' weight is added to `bytes`.
  std::vector<std::string> carry(std::size_t& bytes);
  /// The commit marked by `marker` landed: its marker waits for the thread's next commit.
  void landed(const std::string& marker);
  /// `markers` are gone (a commit carrying them landed, or found them gone already).
  void removed(const std::vector<std::string>& markers);
  /// A commit that carried `carried` (from carry) and is marked by `marker` landed: the
  /// carried ones are gone and `marker` waits for the thread's next commit.
  void commit_landed(const std::vector<std::string>& carried, const std::string& marker);
  /// A removal at `path` of a commit that carried `carried` found its node gone already
  /// (commit_with_cleanup's `gone`): when it is one of those markers, it waits no more.
  void carried_gone(const std::vector<std::string>& carried, const std::string& path);
  /// Sends a commit multi whose op 0 creates `marker` (commit_with_marker) with the calling
  /// thread's waiting markers riding last; once it landed they are gone and `marker` waits
  /// in their place. One found gone already is dropped and the multi sent again (no conflict).
  /// The last `cleanup` of `operations` are removals that, like the markers, may find
  /// their node gone: such a one is dropped too. `written_named` (optional) tells a lost
  /// reply's resolution whether a head names what the multi wrote, and `generation`
  /// (optional) is the session the multi must go out on (Resolution: SessionExpired when
  /// that one ended, nothing sent).
  std::optional<bool> commit(std::vector<Operation> operations, const std::string& marker,
                             MultiResult* result = nullptr, std::size_t cleanup = 0,
                             std::function<bool()> written_named = {},
                             std::optional<std::uint64_t> generation = std::nullopt);
  /// Removes every waiting marker, one multi per batch, when the client closes. Best
  /// effort and never throws: what it cannot remove, gc removes after its grace period.
  void remove_all() noexcept;

 private:
  struct Waiting {
    std::uint64_t order;  // when it landed, across threads (the oldest goes first)
    std::string path;
  };
  void evict_over_limits(std::deque<Waiting>& own, std::vector<std::string>& evicted);

  ZooKeeperSession& session_;
  Logger logger_;
  std::chrono::milliseconds grace_;
  std::mutex mutex_;  // guards the members below
  std::unordered_map<std::thread::id, std::deque<Waiting>> waiting_;
  std::size_t count_ = 0;
  std::uint64_t next_order_ = 0;
};

}  // namespace avout::detail
