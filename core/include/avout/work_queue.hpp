#pragma once
// avout::WorkQueue<T>: a distributed queue of items for workers (docs/recipes.md, "Work
// queues"). Any process puts; every item is consumed by exactly one committed take.
//
// Transactions: a take is part of a dosync. It deletes the item's node at its exact version
// inside the transaction's commit multi, so the take commits together with the worker's
// writes to refs in any store, or not at all: a worker that dies or throws before its commit
// never took the item, and the next take gets it. A take outside dosync runs in a dosync of
// its own. A put inside dosync creates the item in the commit multi: it is queued if and only
// if the transaction commits. A put outside dosync runs in a dosync of its own, so a lost
// reply is resolved by the commit's marker (never by looking for the item, which a taker may
// have consumed already): the item is queued exactly once.
//
// Ordering: items are taken in the order of their sequence numbers (FIFO by the order their
// creates landed, compared modulo 2^32 as every sequential queue of avout). A take picks the
// oldest item not already taken by its own transaction; when two takers pick the same item,
// the first commit wins and the other's commit fails on the item's version: its dosync runs
// again (the usual retry, counted in retry_limit) and picks the next item. So a worker sees
// items in queue order, while items taken by concurrent workers may commit in any order.
//
// Waiting: takers that find the queue empty wait in a line of their own (ephemeral sequential
// nodes under the queue's "waiters" folder). Only the first of the line watches the items;
// every other waiter watches the waiter ahead of it. A put wakes the first waiter, which
// leaves the line (waking the next, which looks at the items and waits unless more are
// there): one item wakes at most two waiters, not the herd.
//
// Values live in the item's ZooKeeper node, so an encoded item is bounded by one node's size
// (about 960 KB here): larger ones throw ValueTooLarge and nothing is queued.
//
// What the calls throw (all derive from avout::Error): ValueTooLarge (put); Timeout (put by
// a deadline: nothing was queued); OutcomeUnknown (put: the commit may have landed, and its
// deadline passed or ZooKeeper stayed unreachable before that could be told); CodecError
// (take: the item is not a T; inside that dosync nothing is taken); ConnectionLoss,
// SessionExpired; inside dosync, failures are the transaction's (RetryLimitExceeded when
// takers keep colliding past options().retry_limit).

#include <avout/codec.hpp>
#include <avout/deadline.hpp>
#include <avout/detail/work_queue_handle.hpp>
#include <avout/errors.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace avout {

class Client;

/// A distributed work queue of T items (Client::work_queue). Thread safe; copies share it.
/// Must not outlive its Client.
template <Encodable T>
class WorkQueue {
 public:
  /// Queues `item`; inside dosync it is queued iff the transaction commits.
  void put(const T& item) { core_->put(encode(item), Deadline{}); }
  /// As put; outside dosync gives up by `deadline` (Timeout: nothing queued). Inside dosync
  /// the deadline is ignored (the dosync's bounds it).
  void put(const T& item, const Deadline& deadline) { core_->put(encode(item), deadline); }

  /// Takes the oldest item, waiting for one; inside dosync the take commits with it.
  /// Inside a dosync with a deadline, Timeout once that passed with no item.
  T take() {
    auto item = taken(Deadline{}, true);
    if (!item) throw Timeout("work queue " + core_->name() + ": take: deadline passed");
    return std::move(*item);
  }
  /// As take(); nullopt once `deadline` passed (or its stop token was stopped) with no item
  /// taken. Inside dosync the dosync goes on: the caller may commit without an item.
  std::optional<T> take(const Deadline& deadline) { return taken(deadline, true); }
  /// take(Deadline::after(timeout)).
  std::optional<T> take_for(std::chrono::milliseconds timeout) {
    return take(Deadline::after(timeout));
  }
  /// Takes the oldest item if there is one now; nullopt when the queue is empty.
  std::optional<T> try_take() { return taken(Deadline{}, false); }

  /// The number of items queued now (committed puts not yet taken by a committed take).
  std::size_t size() { return core_->size(); }
  /// The queue's name.
  const std::string& name() const { return core_->name(); }

 private:
  friend class Client;
  /// Made by Client::work_queue only.
  explicit WorkQueue(std::shared_ptr<detail::WorkQueueHandle> core) : core_(std::move(core)) {}
  /// The item a take got, decoded before its take joins the commit (CodecError naming the
  /// queue leaves it queued); nullopt when none was taken.
  std::optional<T> taken(const Deadline& deadline, bool wait) {
    // Held by pointer: an item of an attempt that then retried is replaced or dropped.
    std::unique_ptr<T> item;
    const bool took = core_->take(deadline, wait, [&](const Bytes& bytes) {
      item = std::make_unique<T>(codec::decode_named<T>(bytes, "work queue", core_->name()));
    });
    if (!took || !item) return std::nullopt;
    return std::optional<T>(std::move(*item));
  }
  std::shared_ptr<detail::WorkQueueHandle> core_;  ///< the queue, shared by copies
};

}  // namespace avout
