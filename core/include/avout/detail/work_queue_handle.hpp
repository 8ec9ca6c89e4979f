#pragma once
// What WorkQueue<T> needs of a work queue: byte-level calls on an opaque core (its nodes,
// waiting line and transaction hook live in the library's sources, core/src/recipes).

#include <avout/bytes.hpp>
#include <avout/deadline.hpp>
#include <avout/export.hpp>

#include <cstddef>
#include <functional>
#include <string>

namespace avout::detail {

/// One work queue of one client, as its typed handles see it. Implemented by the library.
class AVOUT_API WorkQueueHandle {
 public:
  virtual ~WorkQueueHandle() = default;
  /// The queue's name.
  virtual const std::string& name() const = 0;
  /// Queues `item`: in the running dosync's commit, or alone by `deadline`.
  virtual void put(const Bytes& item, const Deadline& deadline) = 0;
  /// Takes the oldest item in a dosync (the running one, or its own), waiting for one while
  /// `wait`: `accept` gets its bytes before the take joins the commit (a throw leaves the
  /// item queued). False when none was taken by `deadline`.
  virtual bool take(const Deadline& deadline, bool wait,
                    const std::function<void(const Bytes&)>& accept) = 0;
  /// The number of items queued now (committed puts not yet taken).
  virtual std::size_t size() = 0;
};

}  // namespace avout::detail
