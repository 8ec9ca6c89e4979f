#pragma once
// avout::Client: one ZooKeeper session (renewed after expiry) and the factory of atoms, refs,
// locks and agents. Thread safe; copying is not allowed, share it by reference.

#include <avout/agent.hpp>
#include <avout/atom.hpp>
#include <avout/backend.hpp>
#include <avout/barrier.hpp>
#include <avout/client_options.hpp>
#include <avout/distributed_lock.hpp>
#include <avout/export.hpp>
#include <avout/garbage_report.hpp>
#include <avout/guarded_by.hpp>
#include <avout/leader_election.hpp>
#include <avout/lease_lock.hpp>
#include <avout/ref.hpp>
#include <avout/semaphore.hpp>
#include <avout/work_queue.hpp>
#include <avout/zookeeper_session.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace avout {

namespace detail {
class AgentWorkers;
class NodeRemovals;
class CallbackExecutor;
class Runtime;
}  // namespace detail

/// A connection to an avout deployment: ZooKeeper for coordination, stores for values.
class AVOUT_API Client {
 public:
  /// Connects to ZooKeeper at `hosts` with default options.
  explicit Client(const std::string& hosts);
  /// Connects with the given options; throws ConnectionLoss when no session comes up in time.
  explicit Client(ClientOptions options);
  /// Closes the session; atoms and other objects made by this client must not outlive it.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// The atom `name` whose value lives in ZooKeeper; created with `initial` if new.
  template <Encodable T>
  Atom<T> atom(const std::string& name, const T& initial) {
    return atom<T>(name, initial, default_store());
  }
  /// The atom `name` whose value lives in `store`; created with `initial` if new. Only one
  /// of many concurrent creators writes its initial value. The first attach records
  /// store.identity() in ZooKeeper; Mismatch (naming both stores, before anything else is
  /// read or written) when the atom's record names another store.
  template <Encodable T>
  Atom<T> atom(const std::string& name, const T& initial, Store& store) {
    auto core = attach_atom(name, store);
    Atom<T> attached(std::move(core));
    attached.create_if_absent(initial);
    return attached;
  }

  /// The ref `name` whose values live in ZooKeeper; created with `initial` if new.
  template <Encodable T>
  Ref<T> ref(const std::string& name, const T& initial) {
    return ref<T>(name, initial, default_store());
  }
  /// The ref `name` whose values live in `store`; created with `initial` if new. All handles
  /// of one name in this client are one ref. CodecError when it holds another kind of value;
  /// Mismatch when ZooKeeper records another store for it (as for atoms).
  /// `store` must outlive the ref's handles: commits write its values through it.
  template <Encodable T>
  Ref<T> ref(const std::string& name, const T& initial, Store& store) {
    const Bytes encoded = encode(initial);
    auto core = attach_ref(name, store, encoded);
    core->require_kind(encoded);
    return Ref<T>(std::move(core));
  }

  /// The agent `name` whose value lives in ZooKeeper; created with `initial` if new.
  template <Encodable T>
  Agent<T> agent(const std::string& name, const T& initial) {
    return agent<T>(name, initial, default_store());
  }
  /// The agent `name` whose value lives in `store`; created with `initial` if new
  /// (OutcomeUnknown when the create may have landed and ZooKeeper stayed unreachable).
  /// CodecError when it holds another kind of value (its sends would fail it for everyone);
  /// Mismatch when ZooKeeper records another store for it (as for atoms).
  template <Encodable T>
  Agent<T> agent(const std::string& name, const T& initial, Store& store) {
    const Bytes encoded = encode(initial);
    auto core = attach_agent(name, store);
    core->create_if_absent(encoded);
    core->require_kind(encoded);
    return Agent<T>(std::move(core));
  }

  /// The distributed reentrant mutex `name` (nodes under options().root + "/locks" + name).
  Lock lock(const std::string& name);
  /// The distributed read-write lock `name`; `quiet_period` is timed_soft's wait without
  /// readers before a writer takes the lock. The first opener records `policy` for every
  /// process; Mismatch (naming both policies) when the lock was created with another.
  ReadWriteLock read_write_lock(
      const std::string& name, WriterPolicy policy = WriterPolicy::hard,
      std::chrono::milliseconds quiet_period = std::chrono::milliseconds(200));

  /// Like dosync(body), and the commit lands only while this thread still holds `guard`'s
  /// lock (its node is checked in the commit multi); LockLost otherwise.
  template <typename F>
  std::invoke_result_t<F&> dosync(const GuardedBy& guard, F&& body) {
    return dosync([&]() -> std::invoke_result_t<F&> {
      detail::guard_transaction(guard);
      return body();
    });
  }

  /// Like dosync(body), giving up with Timeout ("dosync: deadline passed after N attempts",
  /// or "cancelled" for a stop request) once `deadline` expires. It is checked between
  /// attempts and bounds the back-off pauses and every wait for ZooKeeper (a read in flight
  /// is abandoned with Timeout); the body's own code is not cut short. A Timeout leaves
  /// nothing behind (claims released, the attempt's stored values erased); a commit in flight
  /// or whose outcome is still unknown at the deadline is OutcomeUnknown instead.
  template <typename F>
  std::invoke_result_t<F&> dosync(const Deadline& deadline, F&& body) {
    return transact(detail::TransactionSettings{.deadline = deadline}, body);
  }
  /// dosync(guard, body) with a deadline (see dosync(deadline, body)).
  template <typename F>
  std::invoke_result_t<F&> dosync(const Deadline& deadline, const GuardedBy& guard, F&& body) {
    return dosync(deadline, [&]() -> std::invoke_result_t<F&> {
      detail::guard_transaction(guard);
      return body();
    });
  }

  /// Like dosync(body), with the isolation `isolation` in place of options().isolation.
  template <typename F>
  std::invoke_result_t<F&> dosync(Isolation isolation, F&& body) {
    return transact(detail::TransactionSettings{.isolation = isolation}, body);
  }
  /// Like dosync(deadline, body), with the isolation `isolation` in place of
  /// options().isolation.
  template <typename F>
  std::invoke_result_t<F&> dosync(Isolation isolation, const Deadline& deadline, F&& body) {
    return transact(detail::TransactionSettings{.deadline = deadline, .isolation = isolation},
                    body);
  }

  /// Runs `body` as a transaction and returns what it returns. Every ref read inside sees
  /// one snapshot; all writes commit atomically across stores, or the body runs again
  /// (keep it free of side effects). A dosync inside a dosync joins the outer one. Throws
  /// RetryLimitExceeded after options().retry_limit attempts; Timeout once
  /// options().operation_timeout (if set) passed; OutcomeUnknown when the commit's reply was
  /// lost and could not be resolved (it may have landed: do not simply run it again);
  /// CommittedWithError when it landed and a step after it failed; LockLost (guarded_by);
  /// ValidationError, ValueTooLarge, BackendError, CodecError from the refs; the body's own
  /// exceptions abort the transaction and pass through unchanged (a SessionExpired too, unless
  /// this client's session ended during the attempt: that attempt runs again on the new one).
  template <typename F>
  std::invoke_result_t<F&> dosync(F&& body) {
    return transact(detail::TransactionSettings{}, body);
  }

  /// The lease lock `name` (an absolute path; InvalidName otherwise): a keyed mutex whose
  /// holds end after their duration, with fencing tokens. One persistent node per key under
  /// options().root + "/leases" + name keeps the key's token counter. A holder that died is
  /// taken over once a contender has seen its lease unchanged for its duration plus a
  /// margin (a tenth of it + 20 ms) on the contender's own clock. Must not outlive this client.
  LeaseLock lease_lock(const std::string& name);

  /// The double barrier `name` of `n` participants (docs/recipes.md, "Barrier"; folder
  /// options().root + "/barriers" + name): one participant per returned object. The first
  /// opener records `n`; Mismatch when the barrier was created with another count,
  /// InvalidOption for 0. Must not outlive this client.
  Barrier barrier(const std::string& name, std::size_t n);
  /// The candidate `id` in the leader election `name` (docs/recipes.md, "Leader election";
  /// folder options().root + "/elections" + name); a handle that never campaigns reads
  /// leader() only. Must not outlive this client.
  LeaderElection leader_election(const std::string& name, const std::string& id = {});

  /// The semaphore `name` of `n` permits (docs/recipes.md, "Semaphores"; folder
  /// options().root + "/semaphores" + name). The first opener records `n`; Mismatch when the
  /// semaphore was created with another N, InvalidOption for 0. Must not outlive this client.
  Semaphore semaphore(const std::string& name, std::size_t n);

  /// The work queue `name` of T items (docs/recipes.md, "Work queues"; folder
  /// options().root + "/queues" + name). Must not outlive this client.
  template <Encodable T>
  WorkQueue<T> work_queue(const std::string& name) {
    return WorkQueue<T>(attach_work_queue(name));
  }

  /// Sweeps what crashed processes and aborted commits left (transactions.md rule 9): erases every
  /// stored ref value that no head references and whose writer's session is dead, in the
  /// default store and `stores` (each swept once, however often named), and commit markers
  /// created more than `marker_grace` ago, judged on ZooKeeper's clock. A grace shorter than
  /// ClientOptions::marker_grace (within which owners rely on their markers) is raised to
  /// that. Only keys of this
  /// client's deployment are touched. Safe while others commit.
  GarbageReport gc(const std::vector<std::reference_wrapper<Store>>& stores = {},
                   std::chrono::milliseconds marker_grace = std::chrono::minutes(10));

  // Deleting objects (docs/transactions.md, "Deletion"). A removed atom, ref or agent keeps a
  // tombstone under its name forever: every later use of it, in any process, and attaching
  // the name again throw Deleted; nothing recreates it. Each returns true when the call removed
  // the object, false when there was nothing to remove (never made, or removed already).
  // ConnectionLoss or OutcomeUnknown when ZooKeeper or the store stayed unreachable with the
  // removal in flight: calling again is safe (it finds the tombstone, erases what is left).

  /// Deletes the atom `name` whose value lives in ZooKeeper (see remove_atom(name, store)).
  bool remove_atom(const std::string& name);
  /// Deletes the atom `name` of `store`: its cell holds a tombstone instead of the value (a
  /// swap racing it throws Deleted); watchers in every process stop. Leaves the tombstone
  /// (and, for a store outside ZooKeeper, the atom's notice node).
  bool remove_atom(const std::string& name, Store& store);
  /// Deletes the ref `name` whose values live in ZooKeeper (see remove_ref(name, store)).
  bool remove_ref(const std::string& name);
  /// Deletes the ref `name` of `store`: its head becomes a tombstone in a commit (a dosync
  /// racing it throws Deleted, never retries past it), then every stored value of it is
  /// erased. Leaves the tombstone head and its barging tag node.
  bool remove_ref(const std::string& name, Store& store);
  /// Deletes the agent `name` whose value lives in ZooKeeper (see remove_agent(name, store)).
  bool remove_agent(const std::string& name);
  /// Deletes the agent `name` of `store`: its head becomes a tombstone and its values are
  /// erased; sends not yet run are dropped (await throws Deleted in their processes). Leaves
  /// the tombstone head and its (emptied) send queue folder.
  bool remove_agent(const std::string& name, Store& store);
  /// Deletes the lock `name`'s nodes; NotEmpty (nothing removed) while it is held or waited
  /// for. No tombstone: a handle opened before, or the name opened again, makes its nodes
  /// anew on its next lock. Leaves nothing.
  bool remove_lock(const std::string& name);
  /// The same for the read-write lock `name` (its recorded writer policy goes too).
  bool remove_read_write_lock(const std::string& name);
  /// Deletes the lease lock `name`'s key nodes; NotEmpty while a key's lease is held, even
  /// by a holder that died (until a contender takes it over): nothing is removed then, save
  /// free keys when a key was taken in the meantime. Tokens start again from 1. Leaves nothing.
  bool remove_lease(const std::string& name);

  /// Transactions this client committed and attempts it retried.
  std::pair<std::uint64_t, std::uint64_t> transaction_counts() const;

  /// The name stores keep the values of the ref `name` under: namespaced by this client's
  /// deployment (chroot and root) and by kind, for tools that look into a store.
  std::string ref_value_key(const std::string& name) const;
  /// The same for the agent `name`.
  std::string agent_value_key(const std::string& name) const;
  /// The same for the atom `name` held outside ZooKeeper (a ZooKeeper-held atom is the node
  /// options().root + "/atoms" + name).
  std::string atom_value_key(const std::string& name) const;

  /// The ZooKeeper session all coordination runs through.
  ZooKeeperSession& session();
  /// The store used when none is given: values in ZooKeeper nodes.
  Store& default_store();
  /// The options this client was made with.
  const ClientOptions& options() const;

 private:
  // Every dosync: runs `body` with retries and returns what its committed attempt returned.
  template <typename F>
  std::invoke_result_t<F&> transact(const detail::TransactionSettings& settings, F& body) {
    using Result = std::invoke_result_t<F&>;
    if constexpr (std::is_void_v<Result>) {
      detail::run_transaction(*stm_, settings, [&] { body(); });
    } else {
      std::optional<Result> result;
      detail::run_transaction(*stm_, settings, [&] { result.emplace(body()); });
      return std::move(*result);
    }
  }

  std::shared_ptr<detail::AtomHandle> attach_atom(const std::string& name, Store& store);
  std::shared_ptr<detail::AgentHandle> attach_agent(const std::string& name, Store& store);
  /// The byte-level core of the work queue `name`.
  std::shared_ptr<detail::WorkQueueHandle> attach_work_queue(const std::string& name);
  std::shared_ptr<detail::RefHandle> attach_ref(const std::string& name, Store& store,
                                                const Bytes& initial);

  ClientOptions options_;
  std::unique_ptr<ZooKeeperSession> session_;
  std::unique_ptr<Store> zookeeper_store_;
  std::shared_ptr<detail::CallbackExecutor> callbacks_;
  std::unique_ptr<detail::Runtime> runtime_;
  std::unique_ptr<detail::StmContext> stm_;
  std::shared_ptr<detail::AgentWorkers> agent_workers_;
  std::shared_ptr<detail::NodeRemovals> node_removals_;  // queue nodes to delete, retried
};

}  // namespace avout
