#pragma once
// The type-independent machinery of agents (docs/recipes.md, "Agents").
//
// Layout: the agent's head node <root>/agents/heads<name> names the point of its value in
// the value store and, once an action failed, the error. Every send is an ephemeral
// sequential node under <root>/agents/queues<name>; the sequence fixes the global order.
// A closure's send node is empty and only its sender can run it; a named action's node holds
// its name and encoded arguments (its tag starts with 'n'), and any process that defined the
// name can run it. When a process's oldest send is first in the queue, it applies that
// action and the runnable sends right behind it (its own, and named sends of others it
// defined), in memory, one after another, in queue order, and commits the batch in one multi
// (marker, versioned head, deletes of their send nodes), which lets the next sends run. The
// others wait for it rather than race it (a race would only cost failed multis); a multi
// that loses anyway (a restart) is safe: the head's version and the deletes let one land,
// the loser reads the queue again. A sender finds its named send gone with its session
// unchanged: someone ran it. A dead sender's nodes vanish with its session, so it never
// blocks the queue. Locally the sends wait in sequence order (several threads
// may send at once) and one worker at a time drives them; a send is never dropped because
// the store or ZooKeeper failed, only when its node vanished with an expired session.

#include <avout/backend.hpp>
#include <avout/deadline.hpp>
#include <avout/detail/agent_handle.hpp>
#include <avout/zookeeper_session.hpp>

#include "agents/agent_validator.hpp"
#include "agents/await_tickets.hpp"
#include "agents/named_actions.hpp"
#include "queue/sequence.hpp"
#include "queue/sequential_queue.hpp"
#include "records/agent_head.hpp"
#include "records/named_send.hpp"
#include "runtime/metrics_recorder.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace avout::detail {

class CallbackExecutor;
class Runtime;
class AgentWorkers;
class OpenTransaction;

/// The library side of an agent (AgentHandle).
class AgentCore : public AgentHandle, public std::enable_shared_from_this<AgentCore> {
 public:
  AgentCore(std::string name, std::shared_ptr<ReferenceData> data, std::size_t max_value_size,
            Runtime& runtime, std::shared_ptr<AgentWorkers> workers);
  /// Takes its sends still waiting out of the queue-length metric.
  ~AgentCore() override;
  AgentCore(const AgentCore&) = delete;
  AgentCore& operator=(const AgentCore&) = delete;

  /// Creates the head with `initial` unless the agent exists already; OutcomeUnknown when
  /// the create may have landed and ZooKeeper stayed unreachable.
  void create_if_absent(const Bytes& initial) override;
  /// The agent's name.
  const std::string& name() const override { return name_; }

  /// The newest stored value; a value erased under a newer head is read again (rule 8),
  /// BackendError only while the head still names it.
  Bytes read_latest() override;
  /// CodecError naming both kinds when the stored value is another kind than `sample`.
  void require_kind(const Bytes& sample) override;
  /// Queues `action`: inside dosync it goes out with the commit, inside an action after that
  /// action's value is stored (`deadline` ignored), else at once, or Timeout by `deadline`
  /// (a create already sent is settled later: its node is deleted). `blocking` picks the
  /// send_off workers.
  void send(AgentAction action, bool blocking, const Deadline& deadline) override;
  /// The client's operation_timeout from now, or none.
  Deadline default_deadline() const override;
  /// Waits until every action this process sent before the call has run; false once
  /// `deadline` expired. Throws SessionExpired when some of them were dropped because their
  /// send vanished with an expired session, AgentFailed when a failed agent dropped some
  /// unrun (each reported once).
  bool await_until(const Deadline& deadline) override;
  /// The error of the failed action that stopped the agent, if any (read from ZooKeeper).
  std::optional<std::string> error() override;
  /// Clears a failed agent's error and sets its value; throws Error when it is not failed,
  /// OutcomeUnknown when the restart may have landed and ZooKeeper stayed unreachable.
  void restart(const Bytes& value) override;
  /// Registers a named action for this process (replacing one of the same name).
  void define(const std::string& name, NamedAgentAction action) override;
  /// Queues the named action `name`: UndefinedAction when not defined here, CodecError when
  /// `arguments` do not fit it; else as send.
  void send_named(const std::string& name, Bytes arguments, bool blocking,
                  const Deadline& deadline) override;
  /// Installs a validator (empty: none); an action whose result fails it fails the agent.
  void set_validator(std::function<bool(const Bytes&)> validator) override;
  /// Checks a value against the validator; false when rejected.
  bool accepts(const Bytes& value);

  /// True while the calling thread runs an action of any agent.
  static bool in_action();

 private:
  // The member functions are spread over files by job (agent_core.hpp's neighbours):
  //   agent_core.cpp     the head and value: create, read, kind, validator; await;
  //   agent_restart.cpp  a failed agent's error and its restart;
  //   agent_sends.cpp    send, send_named, a send inside dosync, the local queue (pending_);
  //   send_queue.cpp     the send nodes, a queue of the one engine (queue_): creating them
  //                      (grouped in one multi), finding one whose reply was lost, listing
  //                      the queue, watching a predecessor;
  //   agent_drive.cpp    the worker loop: one look at the oldest send, retries, finishing;
  //   agent_batch.cpp    planning a batch and applying it in one multi.
  // What await waits for (AwaitTickets), the named actions and the validator are small
  // classes with their own mutex; the group of creates keeps its own (create_mutex_), its
  // functions in send_queue.cpp with the rest of the queue's.

  // The most actions one commit applies: a batch holds the queue for its run, and one whose
  // outcome is in doubt runs again whole.
  static constexpr std::size_t max_batch = 512;
  // Sends made by the action running on this thread: they go out once its value is stored.
  static thread_local std::vector<std::function<void()>>* sends_of_running_action;

  // A commit of a batch of actions whose outcome is not known yet (its reply was lost and
  // ZooKeeper stayed unreachable): resolved through its marker before anything else is tried.
  struct InDoubt {
    std::string marker;
    Point previous;                // the value the batch replaced
    std::optional<Point> written;  // set when some action succeeded
    bool in_multi = false;         // `written` created and `previous` removed by the multi itself
    std::vector<std::function<void()>> later_sends;  // their own sends, out once it landed
    std::vector<std::string> nodes;                  // the send nodes it deletes, oldest first
    std::size_t unrun = 0;  // our sends among them it drops unrun: the agent failed
    std::string error;      // the agent's error then
  };
  struct Pending {
    std::string node;  // the send node
    AgentAction action;
    bool blocking = false;
    std::optional<InDoubt> in_doubt;
    bool named = false;            // another process may run it
    std::uint64_t generation = 0;  // the session's before its node was created
    std::uint64_t ticket = 0;      // what await waits for (tickets_)
  };
  using PendingMap = std::map<std::int32_t, Pending, SequenceOrder>;
  // A send of the queue a batch runs: one of ours, or another process's named action.
  struct Runnable {
    std::string node;
    Pending* own = nullptr;  // null for another process's send
    AgentAction action;      // another process's send: the named action bound to its arguments
  };
  // Thrown when send nodes of this process are gone: run by another process, or gone with
  // its session.
  struct SendVanished {
    std::vector<std::string> nodes;  // the oldest pending send's among them
  };
  // A send waiting for its node: the sends of several threads are created in one multi.
  // Guarded by create_mutex_ once shared.
  struct Creating {
    std::string tag;
    Bytes data;                     // the node's: empty for a closure
    std::int32_t head_version = 0;  // the head's when the send was made
    std::string node;
    std::exception_ptr error;
    bool taken = false;      // in a group whose create went out
    bool done = false;       // node or error is set
    bool abandoned = false;  // its sender gave up (Timeout): a node made for it is deleted
  };
  using Group = std::vector<std::shared_ptr<Creating>>;
  // The created paths of a group's reply, in group order; nullopt when the deadline expired
  // first. Throws what the create(s) failed with.
  using CreateReply = std::function<std::optional<std::vector<std::string>>(const Deadline&)>;
  // What one look at the oldest pending send came to.
  enum class Step { finished, dropped, waiting, retry_later, again };
  // A send of a dosync whose create's outcome this process does not know: its reply was
  // lost, or the commit ended in doubt. Unless settled by the commit, its node is looked for
  // in the background when the last copy of the commit's callback goes, and run if found.
  struct SendInDoubt {
    std::shared_ptr<AgentCore> agent;
    std::string tag;
    std::shared_ptr<AgentAction> action;
    bool blocking = false;
    bool named = false;
    std::uint64_t generation = 0;
    bool landed = false;   // the commit landed (its reply may still have been lost)
    bool settled = false;  // queued by the commit's callback
    SendInDoubt(std::shared_ptr<AgentCore> agent, std::string tag,
                std::shared_ptr<AgentAction> action, bool blocking, bool named,
                std::uint64_t generation)
        : agent(std::move(agent)),
          tag(std::move(tag)),
          action(std::move(action)),
          blocking(blocking),
          named(named),
          generation(generation) {}
    SendInDoubt(const SendInDoubt&) = delete;
    SendInDoubt& operator=(const SendInDoubt&) = delete;
    ~SendInDoubt();
  };

  // --- agent_sends.cpp
  // Queues a closure, or a named send when `named` holds its node's data (send()'s contract).
  void submit(AgentAction action, std::optional<Bytes> named, bool blocking,
              const Deadline& deadline);
  // The head's version for a send, after refusing one to a failed agent (AgentFailed), or
  // Timeout when `bound` expired before the head was read; nothing is sent yet.
  std::int32_t head_version_for_send(const Deadline& bound, const std::string& what);
  // A send inside dosync: a create in the transaction's commit multi, queued by its callback.
  void send_with_commit(OpenTransaction& transaction, const std::string& tag, Bytes data,
                        AgentAction action, bool blocking, bool named, std::uint64_t generation);
  // Queues the send whose node is `node` locally (a ticket for await unless given one) and
  // wakes a worker when it is now the oldest.
  void enqueue(std::string node, AgentAction action, bool blocking, bool named,
               std::uint64_t generation, std::optional<std::uint64_t> ticket = std::nullopt);
  // This process's pending send whose node is `node` (a path or a name), with mutex_ held.
  PendingMap::iterator find_pending(const std::string& node);
  // Erases the pending send whose node is `node`, with mutex_ held: its ticket, or nullopt
  // when it is not ours.
  std::optional<std::uint64_t> erase_pending(const std::string& node);

  // --- agent_drive.cpp
  // Has a worker of the oldest send's pool drive the queue.
  void kick();
  // The worker loop (one worker at a time): runs the oldest sends while it can.
  void drive(bool pool);
  // The oldest pending send for a worker of `pool`, or null when the worker is done (none
  // left, or it belongs to the other pool, which is then asked to drive).
  Pending* claim_front(bool pool);
  // Settles the sends a listing showed gone: run by another process, or dropped.
  Step settle_vanished(const SendVanished& vanished, std::vector<std::string>& done);
  // Waits the growing retry pause, then hands the agent back to its pool.
  void retry_after_pause();
  // One look at the oldest send: resolve a commit in doubt, plan a batch, apply it.
  Step step(Pending& front, std::vector<std::string>& done);
  // Rule 6 for the front's batch whose commit's reply was lost: Step::finished when it
  // landed, nullopt when it did not (planned again), retry_later while ZooKeeper is away.
  std::optional<Step> resolve_in_doubt(Pending& front, std::vector<std::string>& done);
  // What follows a batch that landed: erase the replaced value, count the unrun, make its
  // actions' sends.
  void complete(InDoubt& landed);
  // Makes a send an action made once that action committed: again while ZooKeeper stays
  // unreachable (nothing of it is left then), until it is made or the client closes; what is
  // dropped is logged and counted for await.
  void make_later_send(const std::function<void()>& go);
  // Forgets this process's sends among `nodes`: ran, or dropped when `dropped`.
  void finish(const std::vector<std::string>& nodes, bool dropped);
  // The agent was removed: drops every pending send (their awaiters get Deleted).
  void drop_deleted();

  // --- agent_batch.cpp
  // The batch to run when the front's send is first in the queue; empty while it waits for
  // a predecessor (watched); SendVanished when its node is gone.
  std::vector<Runnable> plan(Pending& front);
  // The batch from `mine` (the front's node, first in `queue`) on; nullopt when sends made
  // since the listing may follow (list again first).
  std::optional<std::vector<Runnable>> gather(Pending& front, const std::vector<std::string>& queue,
                                              std::vector<std::string>::const_iterator mine,
                                              bool listed);
  // Reads the named sends of other processes in `queue` not read yet (each once).
  void learn_named_sends(const std::vector<std::string>& queue);
  // Another process's named send `node` bound to its arguments, when defined here and of
  // the pool `blocking`.
  std::optional<AgentAction> runnable(const std::string& node, bool blocking);
  // What a batch's multi holds besides its send nodes' removals (rule 11).
  std::size_t fixed_multi_bytes() const;
  // For a value ZooKeeper holds: its create at `point` and the removal of `previous`, to
  // ride in the batch's multi (one write per batch); empty for other stores, or when they
  // would not fit.
  std::vector<Operation> held_value_operations(const Bytes& value, const Point& point,
                                               const Point& previous,
                                               const std::vector<Runnable>& batch) const;
  // Runs `batch` on the current value and commits it in one multi.
  Step apply(std::vector<Runnable> batch, Pending& front, std::vector<std::string>& done);
  // The batch's write of the head `head_node` holds (`head`): the actions run on its value
  // (a new value stored, or its create and the old one's removal put in `value_operations`
  // for the multi), or a failed agent's check that drops them unrun; nullopt when another
  // process's batch moved the head meanwhile (plan again).
  std::optional<Operation> head_operation(const std::vector<Runnable>& batch,
                                          const NodeData& head_node, const AgentHead& head,
                                          InDoubt& commit,
                                          std::vector<Operation>& value_operations);
  // Runs the batch's actions on `value` in queue order, each on the value the one before
  // left, until one fails (its error set in `next_head`, the sends behind it counted
  // unrun); true when some action changed the value. Their sends are kept in `commit`.
  bool run_actions(const std::vector<Runnable>& batch, Bytes& value, AgentHead& next_head,
                   InDoubt& commit);
  // Counts our sends in `batch` from `first` on as dropped unrun, with the agent's `error`.
  static void count_unrun(InDoubt& commit, const std::vector<Runnable>& batch, std::size_t first,
                          const std::string& error);
  // Sends the batch's multi and acts on its outcome.
  Step commit_batch(InDoubt commit, std::vector<Operation> operations, std::size_t cleanup,
                    std::uint64_t generation, Pending& front, std::vector<std::string>& done);
  // Whether the head names `point` now (a lost commit reply's resolution, rule 6).
  bool head_names(const std::optional<Point>& point);
  // Erases a value no head names; one left behind is gc's.
  void erase_quietly(const Point& point);
  // Forgets the queue listing: the next plan lists again.
  void forget_listing();

  // --- send_queue.cpp
  // Whether the head exists after a create whose reply was lost (outcome_of: a sync, then a
  // read), asked again while ZooKeeper does not answer; false too after one session timeout
  // of silence.
  bool head_exists_after_outage();
  // Watches the send right before `own` in `queue` (a listing in order) for its removal
  // (queue_.turn_in); false when it is gone already: list again.
  bool watch_predecessor(const std::vector<std::string>& queue, const std::string& own);
  // The send nodes of the queue in sequence order, remembered as the last listing.
  std::vector<std::string> list_queue();
  // This process's sends made before the last listing was asked for (sequence up to
  // listed_up_to_) and missing from `listing` (that listing): their nodes are gone.
  std::vector<std::string> gone_from(const std::vector<std::string>& listing);
  // The name prefix a send node of `tag` is created with, "s-<tag>-" (the server appends
  // its sequence).
  std::string send_prefix(const std::string& tag) const;
  // That prefix's path in the queue folder.
  std::string send_path_prefix(const std::string& tag) const;
  // What the create of a send node weighs in a request (rule 11), as multi_size.hpp counts.
  std::size_t send_create_size(const std::string& tag, const Bytes& data) const;
  // How many of the sends waiting in to_create_ fit one request together (at least one).
  std::size_t sends_fitting_one_request() const;
  // Creates the send node of `tag` (grouped with other threads' in one multi): its path,
  // Timeout or OutcomeUnknown by `deadline`.
  std::string create_send(const std::string& tag, Bytes data, std::int32_t head_version,
                          const Deadline& deadline);
  // With create_mutex_ held by `lock` (released meanwhile): creates the sends waiting in
  // to_create_ that fit one request, in one request.
  void create_next_group(std::unique_lock<std::mutex>& lock, const Deadline& deadline);
  // With create_mutex_ held by `lock`: gives up the send `mine` once `deadline` expired
  // (Timeout, or OutcomeUnknown for a named send whose create went out).
  [[noreturn]] void give_up_send(std::unique_lock<std::mutex>& lock,
                                 const std::shared_ptr<Creating>& mine, const Deadline& deadline);
  // A send whose create's outcome was unknown and whose node was not found: created again
  // (until it is found or made) while that cannot run it twice (a closure, or no batch
  // committed since it was made), else OutcomeUnknown.
  std::optional<std::string> create_again(const Creating& one);
  // Whether a named send not found may have run (the head moved since it was made, read
  // after a sync): false for a closure; ConnectionLoss or SessionExpired when ZooKeeper did
  // not answer.
  bool named_send_may_have_run(const Creating& one);
  // Sends the creates of `group` in one request and settles them, or has a worker settle
  // them once `deadline` passed.
  void create_together(const Group& group, const Deadline& deadline);
  // Settles each send of `group` from `reply`: its node, found again or made again.
  void settle(const Group& group, const CreateReply& reply);
  // Hands a send its node or error; a node made for a sender that gave up is deleted.
  void finish_create(Creating& one, std::optional<std::string> node, std::exception_ptr error);
  // Whether the sender of `one` gave up waiting.
  bool gave_up(const Creating& one);
  // Deletes a send node nobody will run, until ZooKeeper says it is gone.
  void remove_abandoned(const std::string& node);
  // The node of this process's send `tag` whose create's reply was lost, or nullopt when
  // ZooKeeper said there is none (queue_.find: a listing after a sync); asked again while
  // ZooKeeper does not answer, never judged from silence alone; ConnectionLoss once the
  // client closes.
  std::optional<std::string> locate_send(const std::string& tag);

  std::string name_;
  std::shared_ptr<ReferenceData> data_;
  std::size_t max_value_size_;
  Runtime& runtime_;
  MetricsRecorder metrics_;  // the runtime's, copied: the destructor records without it
  ZooKeeperSession& session_;
  std::shared_ptr<AgentWorkers> workers_;
  std::string head_path_;
  std::string queue_path_;
  SequentialQueue queue_;     // the send nodes in queue_path_
  AgentValidator validator_;  // its own mutex
  NamedActions named_;        // defined here; its own mutex (looked up while mutex_ is held)
  AwaitTickets tickets_;      // its own mutex (taken while mutex_ is not)

  std::mutex mutex_;  // guards the members below
  // Keyed by the send node's sequence: the local order is ZooKeeper's order, whatever order
  // the threads that sent got their replies in.
  PendingMap pending_;
  bool running_ = false;                      // a worker is in drive()
  bool again_ = false;                        // something changed while it ran: it looks once more
  std::chrono::milliseconds retry_delay_{0};  // grows while the store or ZooKeeper is down
  std::vector<std::string> known_queue_;      // last queue listing, minus nodes known gone
  // Sequence of our newest send made before that listing was asked for (nullopt: none).
  std::optional<std::int32_t> listed_up_to_;
  // Other processes' named sends read so far (nullopt: unreadable), by node; the driving
  // worker's alone.
  std::map<std::string, std::optional<NamedSend>> named_sends_;

  std::mutex create_mutex_;  // guards the members below
  std::condition_variable created_;
  Group to_create_;        // sends waiting for the multi in flight to return
  bool creating_ = false;  // a thread is creating a group of sends
};

}  // namespace avout::detail
