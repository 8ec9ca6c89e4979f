#include "support/fault_streams.hpp"

#include <atomic>
#include <map>
#include <optional>
#include <random>

namespace avout::testing {
namespace {

// The order of first draws of threads nobody named.
std::atomic<std::uint64_t> unnamed_threads{0};
constexpr std::uint64_t unnamed_domain = 0x756e6e616d6564ULL;

struct Stream {
  std::optional<std::uint64_t> key;
  bool named = false;  // only named streams keep notes: nobody takes an unnamed one's
  std::map<std::uint64_t, std::mt19937_64> sources;  // per injector seed
  std::vector<std::string> notes;
};

thread_local Stream stream;

}  // namespace

std::uint64_t mix_keys(std::uint64_t a, std::uint64_t b) {
  // splitmix64 of a combination, so that neighbouring keys give unrelated sources.
  std::uint64_t z = a * 0x9e3779b97f4a7c15ULL + b + 0x632be59bd9b4e019ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void name_fault_stream(std::uint64_t key) {
  stream.key = key;
  stream.named = true;
  stream.sources.clear();
}

double draw_fault(std::uint64_t seed) {
  if (!stream.key) stream.key = mix_keys(unnamed_domain, ++unnamed_threads);
  auto source = stream.sources.find(seed);
  if (source == stream.sources.end()) {
    source = stream.sources.emplace(seed, std::mt19937_64(mix_keys(seed, *stream.key))).first;
  }
  return std::uniform_real_distribution<double>(0.0, 1.0)(source->second);
}

void note_fault(const std::string& what) {
  if (stream.named) stream.notes.push_back(what);
}

std::vector<std::string> take_fault_notes() {
  std::vector<std::string> notes;
  notes.swap(stream.notes);
  return notes;
}

}  // namespace avout::testing
