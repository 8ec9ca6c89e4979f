#include "watch.hpp"

#include "inspect.hpp"
#include "json_value.hpp"

#include <atomic>
#include <csignal>
#include <ctime>
#include <iostream>
#include <mutex>

namespace avout::tool {

/// An encoded value passed through untouched, so a watch works whatever the object's type.
struct AnyValue {
  Bytes encoded;
};

}  // namespace avout::tool

template <>
struct avout::Codec<avout::tool::AnyValue> {
  static void encode(const avout::tool::AnyValue& value, avout::Bytes& out) {
    out.insert(out.end(), value.encoded.begin(), value.encoded.end());
  }
  static avout::tool::AnyValue decode(avout::codec::Reader& in) {
    auto all = in.take(in.remaining());
    return {avout::Bytes(all.begin(), all.end())};
  }
};

namespace avout::tool {

namespace {

sigset_t interrupts() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void block_interrupts() {
  const sigset_t set = interrupts();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int watch(Client& client, Store& store, const std::string& kind, const std::string& name,
          std::size_t count, bool json, std::ostream& out) {
  std::mutex printing;
  std::atomic<std::size_t> printed{0};
  auto print_value = [&](const AnyValue&, const AnyValue& next) {
    std::lock_guard lock(printing);
    if (count != 0 && printed.load() >= count) return;
    Report report{{"kind", kind}, {"name", name}};
    report.update(value_fields(next.encoded));
    if (json)
      out << dump_line(report);
    else if (report.contains("value_error"))
      out << "<" << report["value_error"].get<std::string>() << ">";
    else
      out << dump_line(report["value"]);
    out << std::endl;  // a reader on a pipe sees each value as it comes
    ++printed;
  };
  // The handles start from the stored value, so attaching never creates anything.
  std::optional<Atom<AnyValue>> atom;
  std::optional<Ref<AnyValue>> ref;
  if (kind == "atom") {
    atom.emplace(client.atom<AnyValue>(name, AnyValue{atom_value(client, store, name)}, store));
    atom->add_watch("avout-watch", print_value);
  } else {
    ref.emplace(client.ref<AnyValue>(name, AnyValue{ref_value(client, store, name)}, store));
    ref->add_watch("avout-watch", print_value);
  }
  std::cerr << "watching " << kind << " " << name << std::endl;
  const sigset_t set = interrupts();
  const timespec tick{0, 100'000'000};
  while (count == 0 || printed.load() < count) {
    if (sigtimedwait(&set, nullptr, &tick) > 0) break;
  }
  if (atom) atom->remove_watch("avout-watch");
  if (ref) ref->remove_watch("avout-watch");
  return 0;
}

}  // namespace avout::tool
