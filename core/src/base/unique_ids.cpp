#include "base/unique_ids.hpp"

#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <random>

#include <unistd.h>

namespace avout::detail {

namespace {

// Reseeded in a forked child: a generator state copied by fork() would make the child repeat
// its parent's (and its siblings') ids, and a lost reply would then be "resolved" by another
// process's write.
std::mt19937_64& process_generator() {
  thread_local pid_t seeded_for = 0;
  thread_local std::mt19937_64 generator;
  if (seeded_for != getpid()) {
    std::random_device entropy;
    std::seed_seq seed{entropy(), entropy(), entropy(), entropy(), static_cast<unsigned>(getpid())};
    generator.seed(seed);
    seeded_for = getpid();
  }
  return generator;
}

}  // namespace

std::uint64_t unique_writer_id() {
  auto& generator = process_generator();
  std::uint64_t id = 0;
  while (id == 0) id = generator();
  return id;
}

std::string unique_uuid() {
  boost::uuids::basic_random_generator<std::mt19937_64> uuids(process_generator());
  return boost::uuids::to_string(uuids());
}

}  // namespace avout::detail
