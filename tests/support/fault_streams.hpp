#pragma once
// Where the fault injectors (support/zookeeper_faults.hpp, support/faulty_store.hpp) draw
// their decisions from: a stream per thread, so that a seed replays which faults each
// logical operation meets, whatever order the threads of a process happen to call in.
//
// A decision of an injector seeded with `s`, asked by a thread whose stream is named `k`, is
// the n-th draw of a source seeded with (s, k), n counting that injector's earlier draws on
// that thread since the stream was named. A test names a thread's stream (e.g. from seed,
// process, thread and operation number); a thread nobody names gets a stream from the order
// in which it first drew, which replays only as far as the threads start in the same order.

#include <cstdint>
#include <string>
#include <vector>

namespace avout::testing {

/// Names the calling thread's stream `key` and restarts it: its next decisions depend only
/// on `key` and on the injectors' seeds.
void name_fault_stream(std::uint64_t key);

/// One uniform draw in [0, 1) from the calling thread's stream of the injector seeded `seed`.
double draw_fault(std::uint64_t seed);

/// Notes a fault injected on the calling thread if its stream was named (what a replay test
/// compares).
void note_fault(const std::string& what);

/// The faults noted on the calling thread since the last call, oldest first.
std::vector<std::string> take_fault_notes();

/// A well-mixed key of two numbers (e.g. a seed and a thread index) for name_fault_stream.
std::uint64_t mix_keys(std::uint64_t a, std::uint64_t b);

}  // namespace avout::testing
