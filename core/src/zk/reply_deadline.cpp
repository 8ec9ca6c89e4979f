// The thread's reply deadline (detail::ReplyDeadline): the session's waits honour the one
// opened by the innermost call that took a deadline.
#include <avout/zookeeper_session.hpp>

namespace avout::detail {
namespace {
thread_local const Deadline* reply_deadline = nullptr;
}  // namespace

ReplyDeadline::ReplyDeadline(const Deadline& deadline)
    : deadline_(deadline), outer_(reply_deadline) {
  reply_deadline = &deadline_;
}

ReplyDeadline::~ReplyDeadline() { reply_deadline = outer_; }

const Deadline& ReplyDeadline::current() {
  static const Deadline unbounded;
  return reply_deadline != nullptr ? *reply_deadline : unbounded;
}
}  // namespace avout::detail
