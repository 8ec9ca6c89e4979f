#pragma once
// The queue nodes of one client whose removal could not be made at once, for every user of
// the sequential queue with nodes of its own (locks, the semaphore, elections, barriers, the
// work queue's waiters): a hold that lapsed or was released while disconnected, a handle
// destroyed while holding, an attempt given up with its create in doubt, a delete whose reply
// was lost or that failed while the connection was down. Each is sent again until it is
// deleted, found gone, or its session is known ended (an expiry ZooKeeper reported): a node
// left behind in a live session would hold its place in line (a lock, one of N permits, a
// leadership) until the session ends.

#include <avout/deadline.hpp>
#include <avout/zookeeper_session.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

namespace avout::detail {

class SequentialQueue;

/// One client's queue of nodes to remove, worked by one thread (see start()). Thread safe;
/// never calls back into the cores that post to it. Queue nodes are never changed: each is
/// deleted at version 0.
class NodeRemovals {
 public:
  explicit NodeRemovals(ZooKeeperSession& session);
  /// stop().
  ~NodeRemovals();
  NodeRemovals(const NodeRemovals&) = delete;
  NodeRemovals& operator=(const NodeRemovals&) = delete;

  /// Starts the thread and its session listener (once; later calls do nothing). Call it
  /// before the first post, with no lock held that a session listener may take.
  void start();
  /// Queues the removal of `node`, which lives in the session of `generation`
  /// (ZooKeeperSession::generation()); returns at once.
  void post(std::string node, std::uint64_t generation);
  /// Queues the removal of whatever node a create of `folder`/`prefix`<sequence> left in the
  /// session of `generation`, a create whose outcome is unknown (given up while in flight):
  /// a sync and a listing on that session, sent after the create, show whether it landed.
  void post_created(std::string folder, std::string prefix, std::uint64_t generation);
  /// Deletes the node at `path` of `queue` (in the session of `generation`) now, its reply
  /// awaited until `bound`: true when confirmed (deleted, or gone already); else (a lost
  /// reply, an outage, no answer by `bound`) queues it as post() does and returns false.
  bool remove_now(SequentialQueue& queue, const std::string& path, std::uint64_t generation,
                  const Deadline& bound) noexcept;
  /// As remove_now() for whatever node a create of `prefix` in `queue`, whose outcome is
  /// unknown, made: looked for until `bound`, then left to post_created() if still unknown.
  bool remove_created_now(SequentialQueue& queue, const std::string& prefix,
                          std::uint64_t generation, const Deadline& bound) noexcept;
  /// Ends the thread, dropping what is queued: call it just before the session closes,
  /// which deletes the nodes at once, once nothing posts any more.
  void stop();

 private:
  struct Removal {
    std::string node;  // or, with `prefix`, the folder to look in
    std::uint64_t generation;
    std::string prefix{};  // non-empty: remove the child of `node` named prefix...
  };
  // Finds the nodes the creates of the removals with a prefix made (zk/outcome.hpp's
  // child_outcome) and returns them (the others pass unchanged); those not answered by
  // then are left in `left`.
  std::vector<Removal> resolve(std::vector<Removal> removals, std::vector<Removal>& left);
  // Waits for `reply` until it is ready, stop() is called or `give_up_at`; true when ready.
  bool arrived(const std::future<void>& reply, std::chrono::steady_clock::time_point give_up_at);
  void enqueue(Removal removal);
  void work();
  // Sends the removals together and waits for their replies; returns those to try again.
  std::vector<Removal> remove(std::vector<Removal> removals);

  ZooKeeperSession& session_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Removal> queue_;
  std::stop_source stop_;         // requested by stop(): ends the worker's outcome questions
  std::uint64_t reconnects_ = 0;  // bumped by the session listener: a retry need not wait
  bool stopping_ = false;
  std::once_flag started_;  // the listener and the worker, on the first post
  std::uint64_t listener_ = 0;
  std::thread worker_;
};

}  // namespace avout::detail
