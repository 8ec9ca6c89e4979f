#include "locks/rw_policy.hpp"

namespace avout::detail {

namespace {

// Readers enter only while no writer is queued: successive writers keep new readers out.
class HardPolicy final : public ReadWritePolicy {
 public:
  LockQueue reader_barrier() const override { return LockQueue::writers; }
  bool closes_gate() const override { return false; }
  bool waits_for_quiet() const override { return false; }
};

// Readers enter until a writer whose turn came closes a gate: a stream of readers may keep
// writers waiting, but readers are never held up by writers still queued.
class SoftPolicy : public ReadWritePolicy {
 public:
  LockQueue reader_barrier() const override { return LockQueue::gates; }
  bool closes_gate() const override { return true; }
  bool waits_for_quiet() const override { return false; }
};

// Soft, but a writer also lets a quiet period pass with no reader coming or going, so a
// burst of readers is not cut in two.
class TimedSoftPolicy final : public SoftPolicy {
 public:
  bool waits_for_quiet() const override { return true; }
};

}  // namespace

const ReadWritePolicy& ReadWritePolicy::of(WriterPolicy policy) {
  static const HardPolicy hard;
  static const SoftPolicy soft;
  static const TimedSoftPolicy timed_soft;
  switch (policy) {
    case WriterPolicy::hard: return hard;
    case WriterPolicy::soft: return soft;
    case WriterPolicy::timed_soft: return timed_soft;
  }
  return hard;  // not reached: every policy is named above
}

}  // namespace avout::detail
